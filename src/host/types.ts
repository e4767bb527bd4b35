import type { Block, Turn } from "../turns/turn.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { HookPayload, Tags, UserContext } from "../contracts/context.js";
import type { HookboxEvent, LiveEvent, TextDeltaEvent } from "../events/types.js";
import type { CapabilityGrants } from "../capabilities/grants.js";
import type { Isolation, SandboxLimits, ScriptSource } from "../sandbox/api.js";
import type { Pricing, RunUsage } from "./usage.js";
import type { HookName, RunStatus } from "../turns/keys.gen.js";
import type { ModelSpec } from "../engine/model-spec.js";
import type { ModelSettingsInput, UserContextToModel } from "../engine/model-settings.js";

/*
 * The seam between "what to run" (CLI, sessions, server) and "how it runs" (src/loop + src/sandbox).
 * A TenantRuntime is one tenant's loaded scripts, host tools and model; it starts runs.
 */

/** One uploaded script version: its name and its number within the tenant. */
export interface ScriptRef {
  name: string;
  version: number;
}

/** What a run records about the scripts it runs with (so its resume runs the same ones). */
export interface RunDeployment {
  id: string;
  scripts: (ScriptRef & { bundleHash: string })[];
  shadow: (ScriptRef & { bundleHash: string })[];
}

export type ErrorPolicy = "continue" | "retry" | "abort";

export interface RetryBounds {
  /** Attempts per call, the first included (default 3). */
  maxAttemptsPerCall: number;
  /** Retries per run (default 20). */
  maxRetriesPerRun: number;
  /** Time budget per run for retries, backoff included, ms (default 30000). */
  budgetMs: number;
}

/** Per-run options; session defaults merge under them. */
export interface RunOptions {
  maxIterations?: number;
  maxParallelTools?: number;
  toolTimeoutMs?: number;
  errorPolicy?: ErrorPolicy;
  retry?: Partial<RetryBounds>;
  maxContextRestarts?: number;
  step?: boolean;
  pauseTimeoutMs?: number;
  /** How long an approval (`ask`) waits before it counts as a rejection (default 300000). */
  approvalTimeoutMs?: number;
  /** How many more inferences beforeFinish may ask for in one run (default 3). */
  maxFinishContinues?: number;
  tags?: Tags;
  /** Instructions, sent first as system text on every model call of the run (docs/loop.md). */
  system?: string;
  /** Sampling and output settings for every model call; merged key by key over the session's and tenant's. */
  modelSettings?: ModelSettingsInput;
  /** Merged over `{originalUserRequest: prompt, timestampMs: now}`. */
  userContext?: Partial<UserContext> & { [key: string]: Json | undefined };
  /** Overall run deadline, epoch ms (appears as deadlineMs in every ctx). */
  deadlineMs?: number;
  /** Input plus output tokens for the whole run; past it the run fails with BUDGET. */
  maxTokens?: number;
  /** USD for the whole run, by the tenant's pricing; past it the run fails with BUDGET. */
  maxCostUsd?: number;
  /** Retries per model call for 429, 5xx and network errors (default 2). */
  modelRetries?: number;
  /** W3C traceparent of the caller: the run's trace continues the caller's. */
  traceparent?: string;
  /** What one model call may be sent, and what becomes of what does not fit (docs/loop.md, "The model's context"). */
  context?: ContextOptions;
}

/**
 * The model's context budget and policy. Past the budget, the oldest messages are left out of the turn (system
 * text kept, a tool call never apart from its result) and a `context` block says so, or summarizes them with
 * the tenant's guard model; a `context-trimmed` event records what was left out.
 */
export interface ContextOptions {
  /** Tokens one model call may be sent, estimated from the turn's JSON text (default 100,000). */
  maxTokens?: number;
  /** The same bound in characters of the turn's JSON text; with `maxTokens`, the smaller one holds. */
  maxBytes?: number;
  /** Summarize what is left out with the tenant's guard model (default false: a note says how much was left out). */
  summarize?: boolean;
}

/** Durable side of a run: everything here is awaited/called before the loop moves on. */
export interface RunPersistence {
  /**
   * Called at every phase boundary; the loop does not start the next phase until it resolves. What it keeps of
   * `turn` it reads before it returns: the loop goes on with the same turn object (its blocks never change).
   */
  onSnapshot(phase: SnapshotPhase, turn: Turn): void | Promise<void>;
  /** Called for every event, in seq order, before it is delivered to readers; `json` is its text, made once (src/events/event-json.ts). */
  onEvent(event: HookboxEvent, json?: string): void;
  /** Called for every text delta (never stored): live readers get it after the events emitted before it. */
  onLiveEvent?(event: TextDeltaEvent): void;
  /** Resolves once every event handed to `onEvent` is committed or refused: the loop awaits it after its final event. */
  settled?(): Promise<void>;
  /** Called once per hook chain evaluation, active or shadow (what replay and the shadow report read). */
  onHookCall?(verdict: ChainVerdict): void;
  /**
   * Awaited before each execution of a tool's handler: resolves while this process still owns the run, rejects
   * (LEASE_LOST) once it may not (its lease ran out unrenewed, or another node took the run over), so a node that
   * was stalled past its lease never runs a tool the run's new owner may run too.
   */
  fence?(): Promise<void>;
  /**
   * Tool results committed so far, by the call's tool_call block id (model call ids repeat across
   * responses): on resume these calls are not executed again.
   */
  journal?: {
    lookup(callBlockId: string): Block | undefined;
    record(callBlockId: string, toolUse: Block): void | Promise<void>;
  };
}

export interface StartRunRequest {
  sessionId: string;
  runId?: string;
  /** The user's message for this run (appended as a `user` block unless resuming). */
  prompt: string;
  /** The conversation so far (the session's last turn); the new turn continues it. */
  history?: Turn;
  /** Resume: start from this committed snapshot as it is (no new user block). */
  resumeFrom?: { turn: Turn; nextSeq: number; inferenceId: string; iterations: number; usage?: RunUsage };
  options?: RunOptions;
  persistence?: RunPersistence;
}

export type { ModelSpec };

export interface TenantConfig {
  name: string;
  scripts: ScriptSource[];
  /** Trusted ES module whose default export is an array of host tools. */
  hostToolsModule?: string;
  model: ModelSpec;
  /** Answers when the model's retries are spent (429, 5xx, network errors). */
  fallbackModel?: ModelSpec;
  /** USD per million tokens by model id (`"*"` for any other); needed for maxCostUsd. */
  pricing?: Pricing;
  limits?: Partial<SandboxLimits>;
  /** Ask the model for streamed answers (doStream): live readers get `text-delta` events as the text comes. */
  stream?: boolean;
  /** "process-per-tenant": this tenant's isolates get a worker process of their own (default: the pool's, "shared"). */
  isolation?: Isolation;
  /** The tier the tenant's isolates are placed by: tenants of two cordons never share a worker (default "default"). */
  cordon?: string;
  /** What the tenant's scripts may reach through ctx.fetch, ctx.kv and ctx.model (docs/capabilities.md). */
  capabilities?: CapabilityGrants;
  /**
   * What the model is shown of a run's user context: "request" (default) the original request only, "none"
   * nothing, a list the request plus those fields. Scripts and tools always see all of it.
   */
  userContextToModel?: UserContextToModel;
  /** Defaults for every run of this tenant. */
  runDefaults?: RunOptions;
  /** What each run may produce (bytes, tool calls per inference); unset ones take DEFAULT_RUN_BUDGETS. */
  budgets?: Partial<RunBudgets>;
}

export interface TenantRuntime {
  readonly name: string;
  /** The deployment whose script versions this runtime runs (recorded on each run it starts). */
  readonly deployment?: RunDeployment;
  start(request: StartRunRequest): RunHandle;
}

// --- Runs as the callers see them -------------------------------------------------------------------

/** How a run ended. */
export interface RunResult {
  status: RunStatus;
  turn: Turn;
  reason?: string;
  errorCode?: string;
  text?: string;
  /** A completed run: why its last inference stopped (`stop`; `length` or `content-filter` for a cut or refused answer). */
  finishReason?: string;
  iterations: number;
}

/** What `loop.start(turn)` and `session.run(prompt)` return. */
export interface RunHandle {
  readonly runId: string;
  readonly sessionId: string;
  readonly inferenceId: string;
  /**
   * Every event of the run from seq 1, then live ones; ends after `run-finished`. With `{textDeltas: true}`
   * also the `text-delta` events of a streaming model that arrive while it reads (live only, no seq).
   */
  events(fromSeq?: number): AsyncIterable<HookboxEvent>;
  events(fromSeq: number | undefined, options: { textDeltas: boolean }): AsyncIterable<LiveEvent>;
  /** Resolves when the run has finished (never rejects: failures are a status). */
  wait(): Promise<RunResult>;
  /** Cancels at once: the engine call, running tools, waiting retries, a paused step. */
  cancel(reason?: string): void;
  /** The open pause's id while the run is paused (what a terminal's Enter continues). */
  readonly pauseId?: string;
  /** Continues the pause with this id; false when it is not this run's current pause. */
  continue(pauseId: string): boolean;
  /** Approvals waiting for an answer (beforeToolCall returned `ask`), oldest first. */
  readonly openApprovals: OpenApproval[];
  /** Approves (optionally with edited arguments) or rejects an open approval of this run. */
  answerApproval(pauseId: string, answer: ApprovalAnswer): AnswerResult;
}

export type SnapshotPhase = "pre_inference" | "post_inference" | "post_tools" | "final";

/** An open approval as the answering side sees it (the `approval.requested` event's fields). */
export interface OpenApproval {
  callId: string;
  name: string;
  args: JsonObject;
  reason: string;
  script: string;
  pauseId: string;
  deadlineMs: number;
}

/** An answer from the CLI, a terminal or HTTP. */
export interface ApprovalAnswer {
  decision: "approve" | "reject";
  /** Edited arguments (approve only); validated against the tool's parameters. */
  args?: JsonObject;
  /** Why; kept in `approval.resolved` on either decision (and shown to the model on a rejection). */
  reason?: string;
  /** Who approved (approve only), for the audit trail: kept in `approval.resolved`. */
  approvedBy?: string;
}

export type AnswerResult =
  | { ok: true; decision: "approved" | "rejected" }
  | { ok: false; code: "NOT_FOUND"; message: string }
  | { ok: false; code: "TOOL_ARGS"; message: string; path: string[] };

// --- What a run may produce, and what its hook chains decided ----------------------------------------

/**
 * What one run may produce, whatever its scripts, tools and model do. Sizes are characters of JSON text
 * (what the store writes). A run that goes over one fails with `RUN_BUDGET`, the reason naming the budget.
 */
export interface RunBudgets {
  /** All events of the run together (tool results and model output travel in events). */
  maxRunBytes: number;
  /** One tool result; checked as it arrives, before the host parses a script tool's reply. */
  maxToolResultBytes: number;
  /**
   * What the run adds to the turn it works on (its answers, tool results, what its middleware adds, the turn's
   * own fields); the history it starts from is not counted: the context policy bounds what of it the model sees.
   */
  maxTurnBytes: number;
  /** Tool calls one inference may ask for; above it none of them runs. */
  maxToolCallsPerInference: number;
}

/**
 * What a hook chain decided for one call, in one word: the unit replay and the shadow report compare.
 * - beforeToolCall: `proceed` (arguments as given), `rewrite` (new arguments), `skip`, `deny`, `ask` (a hook asked
 *   for an approval, whatever the answer), `abort`;
 * - afterToolCall: `proceed` (result as given), `rewrite` (result or error replaced), `abort`;
 * - onToolError: `default` (no opinion: the error policy decides), `retry`, `fail`, `abort`;
 * - beforeRun (call `run`): `proceed` (prompt as given), `rewrite` (new prompt), `deny`;
 * - beforeFinish (call `run`): `proceed` (the run finishes), `continue`, `abort`;
 * - any hook: `error` when a hook failure ended the chain (throw, timeout, memory, contract; fail-closed or abort-run).
 */
export type Verdict = "proceed" | "rewrite" | "skip" | "deny" | "ask" | "abort" | "retry" | "fail" | "default" | "continue" | "error";

/** One evaluation of a chain: its input, its verdict and the decision that settled it. */
export interface ChainVerdict {
  hook: HookName;
  callId: string;
  attempt: number;
  verdict: Verdict;
  /** The last hook decision of the chain (`{action: "none"}` when no hook had an opinion). */
  decision: JsonObject;
  payload: HookPayload;
  /** From a shadow chain (never enforced). */
  shadow: boolean;
}
