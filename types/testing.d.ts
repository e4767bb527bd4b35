/*
 * `hookbox/testing` (docs/policy-tests.md): what a policy author's vitest or node:test file imports to call a
 * script's hooks, tools and middleware in the real sandbox, and what a `*.cases.ts` file's `defineCases` takes.
 * Hand-written. Decisions are typed by the script API's own declarations (./decisions.d.ts, re-exported by ./hookbox.d.ts); the host's code
 * (src/testing/) takes its public types from this file, and src/testing/define-cases.ts proves the case file
 * type here agrees with the schema `hookbox test` checks files against.
 */
import type { AfterToolCallReturn, BeforeFinishReturn, BeforeRunReturn, BeforeToolCallReturn, OnToolErrorReturn } from "./decisions.js";
import type { FinishReason, Json, JsonObject, Turn } from "./turns.js";

/** The outside world a policy's calls see. */
export interface PolicyFixtures {
  /** Canned ctx.fetch answers by URL (`"https://..."`, or `"POST https://..."`); only URLs the egress grant allows. */
  fetch?: Record<string, FetchAnswer>;
  /** ctx.kv entries when a call (or session) starts; ctx.kv starts empty otherwise. */
  kv?: Record<string, Json>;
  /** The guard model's answers to ctx.model.generate, in order. */
  guard?: GuardAnswer[];
  /** The time the script sees (`Date.now()`, `new Date()`, payload timestamps, kv expiry): epoch ms or ISO 8601. */
  clock?: number | string;
}

export interface FetchAnswer {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** The body as text, or `json` (sent with content-type application/json); not both. */
  body?: string;
  json?: Json;
}

export type GuardAnswer = string | { text: string; usage?: { inputTokens: number; outputTokens: number } };

/** What the tenant grants the script (as `hookbox run --egress` / `--guard-model`, or a serve config's tenant). */
export interface PolicyGrants {
  egress?: (string | { url: string; headers?: Record<string, { env: string; prefix?: string }>; allowPrivate?: boolean | string[] })[];
  /** ctx.model.generate is granted (answered by `fixtures.guard`). */
  guardModel?: boolean;
  /** false: ctx.kv is denied. */
  kv?: boolean;
}

/** The tenant's sandbox limits per callback (default: production's, 64 MB, 200 ms CPU, 5000 ms wall). */
export interface PolicyLimits {
  memoryMb?: number;
  cpuMs?: number;
  wallMs?: number;
}

export interface LoadPolicyOptions {
  fixtures?: PolicyFixtures;
  grants?: PolicyGrants;
  limits?: PolicyLimits;
}

/** Run state any call may give: what the script reads from its payload or ctx besides the call itself. */
export interface RunState {
  userContext?: { [key: string]: Json };
  tags?: { [tag: string]: string };
  budget?: {
    iteration?: number;
    maxIterations?: number;
    tokensUsed?: number;
    maxTokens?: number;
    costUsd?: number;
    maxCostUsd?: number;
    retriesLeft?: number;
  };
  deadlineMs?: number;
}

export interface ToolCallInput extends RunState {
  tool: string;
  args?: JsonObject;
  callId?: string;
  attempt?: number;
}

export interface AfterToolCallInput extends ToolCallInput {
  result?: Json;
  error?: string | { message: string; code?: string };
  durationMs?: number;
}

export interface OnToolErrorInput extends ToolCallInput {
  error: string | { message: string; code?: string };
}

export interface BeforeRunInput extends RunState {
  prompt: string;
}

export interface BeforeFinishInput extends RunState {
  text: string;
  finishReason?: FinishReason;
  iterations?: number;
  continues?: number;
  maxFinishContinues?: number;
}

export interface MiddlewareInput extends RunState {
  /** The turn the middleware is given, or its messages (one block each). */
  turn?: Turn;
  messages?: { role: "user" | "assistant" | "system"; text: string }[];
}

/** What a middleware handed on (to next(), or returned without calling it), and its blocks' texts. */
export interface MiddlewareOutcome {
  turn: Turn;
  texts: (string | null)[];
  calledNext: boolean;
}

/**
 * The calls a policy (or one of its sessions) takes. A hook resolves with its validated decision (undefined: no
 * opinion); a throw, a timeout or a return outside the hook's contract rejects with the HookboxError a run would
 * record (`code` SCRIPT_ERROR, SANDBOX_TIMEOUT, HOOK_CONTRACT, ...).
 */
export interface PolicyCalls {
  beforeToolCall(input: ToolCallInput): Promise<BeforeToolCallReturn>;
  afterToolCall(input: AfterToolCallInput): Promise<AfterToolCallReturn>;
  onToolError(input: OnToolErrorInput): Promise<OnToolErrorReturn>;
  beforeRun(input: BeforeRunInput): Promise<BeforeRunReturn>;
  beforeFinish(input: BeforeFinishInput): Promise<BeforeFinishReturn>;
  /** A tool of the script, its handler run with `args`; resolves with its JSON result. */
  tool(name: string, args?: JsonObject, state?: RunState): Promise<Json>;
  middleware(name: string, input: MiddlewareInput): Promise<MiddlewareOutcome>;
}

export interface PolicySession extends PolicyCalls {
  /** The session's ctx.kv as the script left it: an entry's value, or undefined. */
  kv(key: string): Promise<Json | undefined>;
  close(): Promise<void>;
}

export interface Policy extends PolicyCalls {
  /** The script's name and what it defines, as the sandbox read them. */
  readonly name: string;
  readonly defines: { readonly hooks: readonly string[]; readonly tools: readonly string[]; readonly middleware: readonly string[] };
  /** Several calls in one run (shared script globals and ctx.kv); `fixtures` replace the policy's for it. */
  session(fixtures?: PolicyFixtures): Promise<PolicySession>;
  /** Frees the script's sandbox (and the helper's sandbox pool with the last policy). */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Loads a script (a path relative to the working directory) in the real sandbox. Each call made on the policy is
 * a run of its own with the fixtures' outside world: nothing one test does reaches the next. Rejects with
 * SCRIPT_LOAD as a tenant's load would, or CONFIG for fixtures production would refuse.
 */
export declare function loadPolicy(path: string, options?: LoadPolicyOptions): Promise<Policy>;

// ---------------------------------------------------------------------------------------------------------------
// Case files: `export default defineCases({...})` in a `*.cases.ts` file, the same shape as a `*.cases.json` file.

/** A partial match: an object names the keys it expects, `"/pattern/flags"` is a pattern, `{"$gt": 1}` an operator. */
export type Expected = Json;

/** A function a `.cases.ts` case may give: throw, or return false or a message, to fail the case. */
export type Check = (got: any) => unknown;

export interface CaseInput extends RunState {
  tool?: string;
  args?: JsonObject;
  callId?: string;
  attempt?: number;
  result?: Json;
  error?: string | { message: string; code?: string };
  durationMs?: number;
  prompt?: string;
  text?: string;
  finishReason?: FinishReason;
  iterations?: number;
  continues?: number;
  maxFinishContinues?: number;
  turn?: Turn;
  messages?: { role: "user" | "assistant" | "system"; text: string }[];
  /** The hook's payload exactly as given (a recorded run's): used as it is. */
  payload?: JsonObject;
}

export type HookExpectation = {
  action?: Expected;
  reason?: Expected;
  args?: Expected;
  result?: Expected;
  error?: Expected;
  prompt?: Expected;
  message?: Expected;
  backoffMs?: Expected;
  timeoutMs?: Expected;
  /** The chain's verdict: proceed, rewrite, skip, deny, ask, abort, retry, fail, default, continue, error. */
  verdict?: Expected;
  errorCode?: Expected;
  /** Which script of the stack made the deciding decision. */
  script?: Expected;
};

export type ToolExpectation = {
  result?: Expected;
  error?: Expected;
  errorCode?: Expected;
};

export type MiddlewareExpectation = {
  turn?: Expected;
  texts?: Expected;
  calledNext?: boolean;
  error?: Expected;
  errorCode?: Expected;
};

export type EventExpectation =
  { never: JsonObject } | { some: JsonObject } | { count: number; of: JsonObject } | { sequence: JsonObject[] };

export type RunExpectation = {
  status?: "completed" | "failed" | "aborted" | "cancelled" | "interrupted";
  text?: Expected;
  reason?: Expected;
  errorCode?: Expected;
  events?: EventExpectation[];
};

export interface ScriptedStep {
  text?: string;
  reasoning?: string;
  toolCalls?: { id: string; name: string; args: JsonObject }[];
  usage?: { inputTokens: number; outputTokens: number };
}

export interface RunSpec {
  prompt: string;
  /** A scripted model file (relative to the case file) or its steps. */
  model: string | { steps: ScriptedStep[] };
  /** Trusted host tools (an ES module, relative to the case file), as `hookbox run --host-tools`. */
  hostTools?: string;
  userContext?: { [key: string]: Json };
  tags?: { [tag: string]: string };
  maxIterations?: number;
  errorPolicy?: "continue" | "retry" | "abort";
}

type HookName = "beforeToolCall" | "afterToolCall" | "onToolError" | "beforeRun" | "beforeFinish";

interface ScriptsFields {
  /** One script, relative to the case file (default: the script beside it). */
  script?: string;
  /** A stack, in load order. */
  scripts?: string[];
  /** The scripts, grants and limits of a serve config's tenant. */
  tenant?: { config: string; name: string };
}

export interface CaseStep {
  hook?: HookName;
  tool?: string;
  middleware?: string;
  input?: CaseInput;
  expect?: HookExpectation | ToolExpectation | MiddlewareExpectation;
  check?: Check;
}

export interface Case extends ScriptsFields, CaseStep {
  name: string;
  run?: RunSpec;
  /** Several calls in one run (shared script globals and kv), each with its own expectation. */
  steps?: CaseStep[];
  fixtures?: PolicyFixtures;
  expect?: HookExpectation | ToolExpectation | MiddlewareExpectation | RunExpectation;
  /** Why the case exists (shown when it fails). */
  note?: string;
}

export interface CaseFile extends ScriptsFields {
  grants?: PolicyGrants;
  limits?: PolicyLimits;
  fixtures?: PolicyFixtures;
  cases: Case[];
}

/** A `*.cases.ts` file's default export: the case file, typed. */
export declare function defineCases(file: CaseFile): CaseFile;
