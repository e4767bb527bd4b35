import { z } from "zod";
import { JsonObjectSchema, JsonSchema, type Json, type JsonObject } from "../turns/json.js";
import { FINISH_REASONS, HOOK_NAMES, RUN_STATUSES, type HookName } from "../turns/keys.gen.js";
import { TurnSchema } from "../turns/turn.js";
import { EgressEntrySchema } from "../capabilities/egress.js";

/*
 * The case file (docs/policy-tests.md): what a policy author writes beside a script, `*.cases.json` or `*.cases.ts`.
 * Strict objects throughout, so a misspelt field is an error naming it, not an expectation silently dropped.
 */

const name = z.string().min(1);
const positiveInt = z.number().int().positive();

/** Which scripts a case runs: one script, a stack in load order, or a tenant of a serve config. */
const ScriptsFields = {
  script: name.optional(),
  scripts: z.array(name).min(1).optional(),
  tenant: z.strictObject({ config: name, name }).optional(),
};

/** What the tenant grants its scripts, as the serve config's tenant fields or the CLI's flags say it. */
const GrantsSchema = z.strictObject({
  egress: z.array(EgressEntrySchema).optional(),
  /** `true`: ctx.model.generate is granted (its answers come from the case's `guard` fixture). */
  guardModel: z.boolean().optional(),
  /** false: ctx.kv is denied (granted by default, as in production). */
  kv: z.boolean().optional(),
});

const LimitsSchema = z.strictObject({ memoryMb: positiveInt.optional(), cpuMs: positiveInt.optional(), wallMs: positiveInt.optional() });

const FetchAnswerSchema = z
  .strictObject({
    status: z.number().int().min(100).max(599).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.string().optional(),
    json: JsonSchema.optional(),
  })
  .refine((answer) => answer.body === undefined || answer.json === undefined, { message: "give body or json, not both" });

const GuardAnswerSchema = z.union(
  [
    z.string(),
    z.strictObject({
      text: z.string(),
      usage: z.strictObject({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() }).optional(),
    }),
  ],
  { error: 'expected the answer\'s text, or {"text": "...", "usage"?: {"inputTokens": n, "outputTokens": n}}' },
);

const FixturesSchema = z.strictObject({
  /** Canned ctx.fetch answers by URL (`"https://..."`, or `"POST https://..."` for one method). */
  fetch: z.record(z.string(), FetchAnswerSchema).optional(),
  /** The tenant's ctx.kv entries when the case starts. */
  kv: z.record(z.string().min(1).max(256), JsonSchema).optional(),
  /** The guard model's answers to ctx.model.generate, in order. */
  guard: z.array(GuardAnswerSchema).optional(),
  /** The time the script sees (`Date.now()`, `new Date()`, the payload's `timestampMs`, kv expiry): epoch ms or ISO 8601. */
  clock: z.union([z.number().int().nonnegative(), z.iso.datetime({ offset: true })]).optional(),
});

const ToolErrorSchema = z.union([z.string(), z.strictObject({ message: z.string(), code: z.string().optional() })]);

const MessageSchema = z.strictObject({ role: z.enum(["user", "assistant", "system"]), text: z.string() });

/** A hook's, tool's or middleware's input, in a form shorter than the payload it becomes (case-input.ts). */
const InputSchema = z.strictObject({
  tool: name.optional(),
  args: JsonObjectSchema.optional(),
  callId: name.optional(),
  attempt: positiveInt.optional(),
  /** afterToolCall: the tool's result; onToolError / afterToolCall: its error. */
  result: JsonSchema.optional(),
  error: ToolErrorSchema.optional(),
  durationMs: z.number().nonnegative().optional(),
  /** beforeRun: the user's message. */
  prompt: z.string().optional(),
  /** beforeFinish: the answer, why the inference stopped, and the run's counts. */
  text: z.string().optional(),
  finishReason: z.enum(FINISH_REASONS).optional(),
  iterations: z.number().int().nonnegative().optional(),
  continues: z.number().int().nonnegative().optional(),
  maxFinishContinues: z.number().int().nonnegative().optional(),
  /** Run state every payload carries. */
  userContext: z.record(z.string(), JsonSchema).optional(),
  tags: z.record(z.string(), z.string()).optional(),
  budget: z
    .strictObject({
      iteration: z.number().int().nonnegative().optional(),
      maxIterations: z.number().int().nonnegative().optional(),
      tokensUsed: z.number().nonnegative().optional(),
      maxTokens: z.number().nonnegative().optional(),
      costUsd: z.number().nonnegative().optional(),
      maxCostUsd: z.number().nonnegative().optional(),
      retriesLeft: z.number().int().nonnegative().optional(),
    })
    .optional(),
  deadlineMs: z.number().nonnegative().optional(),
  /** Middleware: the turn it is given, whole, or as messages. */
  turn: TurnSchema.optional(),
  messages: z.array(MessageSchema).optional(),
  /** The hook's payload exactly as given (a recorded run's): used as it is, no field above applies. */
  payload: JsonObjectSchema.optional(),
});

const ExpectationValue = JsonSchema;

/** What a hook (or a stack's hook chain) is expected to decide; any decision field is a partial match. */
const HookExpectSchema = z.strictObject({
  action: ExpectationValue.optional(),
  reason: ExpectationValue.optional(),
  args: ExpectationValue.optional(),
  result: ExpectationValue.optional(),
  error: ExpectationValue.optional(),
  prompt: ExpectationValue.optional(),
  message: ExpectationValue.optional(),
  backoffMs: ExpectationValue.optional(),
  timeoutMs: ExpectationValue.optional(),
  /** The chain's verdict in one word (proceed, rewrite, skip, deny, ask, abort, retry, fail, default, continue, error). */
  verdict: ExpectationValue.optional(),
  /** The error code of a failed hook (HOOK_CONTRACT, SCRIPT_ERROR, SANDBOX_TIMEOUT, SCRIPT_LOAD, ...). */
  errorCode: ExpectationValue.optional(),
  /** Which script of the stack made the deciding decision. */
  script: ExpectationValue.optional(),
});

const ToolExpectSchema = z.strictObject({
  result: ExpectationValue.optional(),
  /** The error's message, when the handler is expected to fail. */
  error: ExpectationValue.optional(),
  errorCode: ExpectationValue.optional(),
});

const MiddlewareExpectSchema = z.strictObject({
  /** The turn the middleware handed on (to next(), or returned without calling it). */
  turn: ExpectationValue.optional(),
  /** The texts of that turn's blocks, in order. */
  texts: ExpectationValue.optional(),
  /** Whether it called next(). */
  calledNext: z.boolean().optional(),
  error: ExpectationValue.optional(),
  errorCode: ExpectationValue.optional(),
});

const EventExpectSchema = z.union(
  [
    z.strictObject({ never: JsonObjectSchema }),
    z.strictObject({ some: JsonObjectSchema }),
    z.strictObject({ count: z.number().int().nonnegative(), of: JsonObjectSchema }),
    z.strictObject({ sequence: z.array(JsonObjectSchema).min(1) }),
  ],
  {
    error:
      'expected {"never": {...}}, {"some": {...}}, {"count": n, "of": {...}} or {"sequence": [{...}, ...]} (each {...} a partial event)',
  },
);

const RunExpectSchema = z.strictObject({
  status: z.union([z.enum(RUN_STATUSES), z.literal("interrupted")]).optional(),
  text: ExpectationValue.optional(),
  reason: ExpectationValue.optional(),
  errorCode: ExpectationValue.optional(),
  events: z.array(EventExpectSchema).optional(),
});

const ScriptedStepSchema = z.strictObject({
  text: z.string().optional(),
  reasoning: z.string().optional(),
  toolCalls: z.array(z.strictObject({ id: name, name, args: JsonObjectSchema })).optional(),
  usage: z.strictObject({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() }).optional(),
});

const RunSchema = z.strictObject({
  prompt: z.string(),
  /** A scripted model file (relative to the case file) or its steps. */
  model: z.union([name, z.strictObject({ steps: z.array(ScriptedStepSchema).min(1) })]),
  /** Trusted host tools (an ES module, relative to the case file), as `hookbox run --host-tools`. */
  hostTools: name.optional(),
  userContext: z.record(z.string(), JsonSchema).optional(),
  tags: z.record(z.string(), z.string()).optional(),
  maxIterations: positiveInt.optional(),
  errorPolicy: z.enum(["continue", "retry", "abort"]).optional(),
});

/** A function a `*.cases.ts` case may give to check what it got (throw, or return false or a message, to fail). */
const CheckSchema = z.custom<(got: unknown) => unknown>((value) => typeof value === "function", { error: "expected a function" });

const StepSchema = z.strictObject({
  hook: z.enum(HOOK_NAMES).optional(),
  tool: name.optional(),
  middleware: name.optional(),
  input: InputSchema.optional(),
  expect: z.union([HookExpectSchema, ToolExpectSchema, MiddlewareExpectSchema]).optional(),
  check: CheckSchema.optional(),
});

const CaseSchema = z.strictObject({
  name,
  ...ScriptsFields,
  hook: z.enum(HOOK_NAMES).optional(),
  tool: name.optional(),
  middleware: name.optional(),
  run: RunSchema.optional(),
  /** Several calls in one run (shared script globals and kv), each with its own expectation. */
  steps: z.array(StepSchema).min(1).optional(),
  input: InputSchema.optional(),
  fixtures: FixturesSchema.optional(),
  /** Checked against the target's schema once it is known (hook, tool, middleware or run). */
  expect: z.record(z.string(), z.unknown()).optional(),
  check: CheckSchema.optional(),
  /** Why the case exists (shown when it fails); a recorded case says where it was recorded. */
  note: z.string().optional(),
});

export const CaseFileSchema = z.strictObject({
  ...ScriptsFields,
  grants: GrantsSchema.optional(),
  limits: LimitsSchema.optional(),
  fixtures: FixturesSchema.optional(),
  cases: z.array(CaseSchema).min(1),
});

export type CaseFileInput = z.input<typeof CaseFileSchema>;
export type CaseInput = z.infer<typeof InputSchema>;
export type Fixtures = z.infer<typeof FixturesSchema>;
export type Grants = z.infer<typeof GrantsSchema>;
export type RunSpec = z.infer<typeof RunSchema>;
export type FetchAnswer = z.infer<typeof FetchAnswerSchema>;
export type GuardAnswer = z.infer<typeof GuardAnswerSchema>;
export type EventExpectation = z.infer<typeof EventExpectSchema>;
export type Check = (got: unknown) => unknown;

export const HookExpectationSchema = HookExpectSchema;
export const ToolExpectationSchema = ToolExpectSchema;
export const MiddlewareExpectationSchema = MiddlewareExpectSchema;
export const RunExpectationSchema = RunExpectSchema;

/** One call a case (or one of its steps) makes, and what is expected of it. */
export type CallTarget = { kind: "hook"; hook: HookName } | { kind: "tool"; tool: string } | { kind: "middleware"; middleware: string };

export interface CallStep {
  target: CallTarget;
  input: CaseInput;
  expect: Record<string, Json>;
  check?: Check;
}

/** A case as the runner takes it: paths resolved, fixtures merged, its target and expectations checked. */
export interface TestCase {
  /** The case file it is in, as given (relative to the working directory). */
  file: string;
  /** Its index in the file's `cases`. */
  index: number;
  name: string;
  note?: string;
  scripts: ScriptStack;
  fixtures: Fixtures;
  body: { kind: "calls"; steps: CallStep[] } | { kind: "run"; run: RunSpec; expect: Record<string, Json>; check?: Check };
}

export type CallsCase = TestCase & { body: Extract<TestCase["body"], { kind: "calls" }> };
export type RunCase = TestCase & { body: Extract<TestCase["body"], { kind: "run" }> };

/** The scripts a case runs, resolved: absolute paths and the tenant's grants and limits. */
export interface ScriptStack {
  /** Names the stack in messages and keys the runner's loaded stacks. */
  key: string;
  paths: string[];
  grants: Grants;
  limits?: { memoryMb?: number; cpuMs?: number; wallMs?: number };
  /** A serve config's tenant, when the case names one (its model and host tools serve run cases). */
  tenant?: { config: string; name: string };
}

export type { JsonObject };
