import { z } from "zod";
import { JsonObjectSchema, type Json, type JsonObject } from "../turns/json.js";
import type { FinishReason, ToolOrigin as CallOrigin, UserContext } from "../turns/keys.gen.js";

/** The user's original, unabridged request, carried to every middleware, tool and hook (its key's type, keys.gen.ts). */
export type { UserContext };

export const TagsSchema = z.record(z.string(), z.string());
export type Tags = Record<string, string>;

/** Ids and deadlines shared by every ctx and hook payload. */
export interface RunIds {
  sessionId: string;
  inferenceId: string;
  traceId: string;
  turnId: string;
}

/** How much of the run's budget is used and left, as of this ctx (docs/loop.md "Budgets"). */
export interface Budget {
  /** Inferences started so far (1 during the first). */
  iteration: number;
  maxIterations: number;
  /** Input plus output tokens of the finished inferences. */
  tokensUsed: number;
  maxTokens?: number;
  /** USD spent on the finished inferences (0 when the model has no pricing). */
  costUsd: number;
  maxCostUsd?: number;
  /** Tool retries the run may still make (retries per run). */
  retriesLeft: number;
  deadlineMs?: number;
}

export interface CommonContext extends RunIds {
  timestampMs: number;
  deadlineMs?: number;
  tags: Tags;
  userContext?: UserContext;
  budget: Budget;
}

export interface MiddlewareContext extends CommonContext {
  middlewareName: string;
}

export interface ToolContext extends CommonContext {
  toolName: string;
  callId: string;
  callName?: string;
  attempt: number;
}

/** Whose code a tool, hook or middleware is: the host's (trusted, in-process) or a tenant's script (sandboxed). */
export type CodeOrigin = "host" | "script";

export interface ToolCallRef {
  id: string;
  name: string;
  args: JsonObject;
  /** Who runs the call: "provider" for a call the model's provider ran itself (then providerExecuted is true). */
  origin: CallOrigin;
  /** The model's argument text when it was not a JSON object (`args` is then `{}` and the call fails with TOOL_ARGS). */
  rawArgs?: string;
  /** The provider ran this call itself (web search, code execution): hooks observe it, the host never runs it. */
  providerExecuted?: true;
}

export interface ToolErrorInfo {
  message: string;
  code?: string;
}

export interface HookPayloadBase extends CommonContext {
  call: ToolCallRef;
  attempt: number;
}
export interface BeforeToolCallPayload extends HookPayloadBase {
  phase: "beforeToolCall";
}
export interface AfterToolCallPayload extends HookPayloadBase {
  phase: "afterToolCall";
  result?: Json;
  durationMs: number;
  error?: ToolErrorInfo;
}
export interface OnToolErrorPayload extends HookPayloadBase {
  phase: "onToolError";
  error: ToolErrorInfo;
}
/** Before the first inference of a run (not again on resume). */
export interface BeforeRunPayload extends CommonContext {
  phase: "beforeRun";
  prompt: string;
  userContext: UserContext;
}
/** When an inference made no tool calls: the run would finish with `text`. */
export interface BeforeFinishPayload extends CommonContext {
  phase: "beforeFinish";
  text: string;
  /** Why the last inference stopped: `stop`, or `length` / `content-filter` for a cut or refused answer. */
  finishReason?: FinishReason;
  iterations: number;
  /** How many times beforeFinish already sent the run on (this run), and the bound. */
  continues: number;
  maxFinishContinues: number;
}
export type ToolHookPayload = BeforeToolCallPayload | AfterToolCallPayload | OnToolErrorPayload;
export type HookPayload = ToolHookPayload | BeforeRunPayload | BeforeFinishPayload;

export { JsonObjectSchema };
