import type { Block, Turn } from "../turns/turn.js";
import type { Json } from "../turns/json.js";
import type { Tags, UserContext } from "../contracts/context.js";
import type { HookboxEvent } from "../events/types.js";
import type { RunHandle, SnapshotPhase } from "../loop/handle.js";
import type { CapabilityGrants } from "../capabilities/grants.js";
import type { Isolation, SandboxLimits, ScriptSource } from "../sandbox/api.js";
import type { Pricing, RunUsage } from "../loop/usage-meter.js";
import type { RunBudgets } from "../loop/run-budget.js";
import type { ChainVerdict } from "../loop/verdict.js";
import type { ModelSpec } from "../engine/model-spec.js";

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
}

/** Durable side of a run: everything here is awaited/called before the loop moves on. */
export interface RunPersistence {
  /** Called at every phase boundary; the loop does not start the next phase until it resolves. */
  onSnapshot(phase: SnapshotPhase, turn: Turn): void | Promise<void>;
  /** Called for every event, in seq order, before it is delivered to readers. */
  onEvent(event: HookboxEvent): void;
  /** Called once per hook chain evaluation, active or shadow (what replay and the shadow report read). */
  onHookCall?(verdict: ChainVerdict): void;
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
  /** "process-per-tenant": this tenant's isolates get a worker process of their own (default: the pool's, "shared"). */
  isolation?: Isolation;
  /** What the tenant's scripts may reach through ctx.fetch, ctx.kv and ctx.model (docs/capabilities.md). */
  capabilities?: CapabilityGrants;
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
