import { z } from "zod";
import { JsonObjectSchema, JsonSchema, type Json, type JsonObject } from "../turns/json.js";
import type { FinishReason, ToolOrigin as CallOrigin } from "../turns/keys.gen.js";

/** The user's original, unabridged request, carried to every middleware, tool and hook. */
export const UserContextSchema = z
  .object({
    originalUserRequest: z.string(),
    userId: z.string().optional(),
    projectId: z.string().optional(),
    timestampMs: z.number(),
  })
  .catchall(JsonSchema);
export type UserContext = z.infer<typeof UserContextSchema>;

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

export type ToolOrigin = "host" | "script";

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
