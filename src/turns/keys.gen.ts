// PLACEHOLDER written by hand until `hookbox codegen` generates this file from codegen/spec.
// The generator must emit exactly these exported names.
import { z } from "zod";
import { TypedKey } from "./typed-key.js";
import { JsonSchema } from "./json.js";

export const NAMESPACE = "hookbox" as const;

export const BLOCK_KINDS = ["user", "llm_text", "tool_call", "tool_use", "system", "reasoning", "context", "other"] as const;
export type BlockKind = (typeof BLOCK_KINDS)[number];
export const BlockKinds = {
  user: "user", llmText: "llm_text", toolCall: "tool_call", toolUse: "tool_use", system: "system",
  reasoning: "reasoning", context: "context", other: "other",
} as const;

export const PayloadKeys = {
  text: "text", id: "id", name: "name", args: "args", result: "result", error: "error", item: "item", restartType: "restart_type",
} as const;

export const TurnDataKeys = {
  toolConfig: new TypedKey("hookbox.tool_config@v1", "turn_data", z.record(z.string(), JsonSchema)),
  toolDefinitions: new TypedKey("hookbox.tool_definitions@v1", "turn_data", z.array(z.record(z.string(), JsonSchema))),
};

export const TurnMetadataKeys = {
  sessionId: new TypedKey("hookbox.session_id@v1", "turn_metadata", z.string()),
  inferenceId: new TypedKey("hookbox.inference_id@v1", "turn_metadata", z.string()),
  traceId: new TypedKey("hookbox.trace_id@v1", "turn_metadata", z.string()),
  turnId: new TypedKey("hookbox.turn_id@v1", "turn_metadata", z.string()),
  usage: new TypedKey("hookbox.usage@v1", "turn_metadata", z.record(z.string(), JsonSchema)),
  stopReason: new TypedKey("hookbox.stop_reason@v1", "turn_metadata", z.string()),
  model: new TypedKey("hookbox.model@v1", "turn_metadata", z.string()),
  userContext: new TypedKey("hookbox.user_context@v1", "turn_metadata", z.record(z.string(), JsonSchema)),
};

export const BlockMetadataKeys = {
  toolCalls: new TypedKey("hookbox.tool_calls@v1", "block_metadata", z.number().int()),
  middleware: new TypedKey("hookbox.middleware@v1", "block_metadata", z.string()),
  origin: new TypedKey("hookbox.origin@v1", "block_metadata", z.enum(["host", "script"])),
};

export const RunMetadataKeys = {
  runId: new TypedKey("hookbox.run_id@v1", "run_metadata", z.string()),
  tenant: new TypedKey("hookbox.tenant@v1", "run_metadata", z.string()),
  status: new TypedKey("hookbox.run_status@v1", "run_metadata", z.string()),
};

/** Flag family: `hookbox.context_restart_disabled.<suffix>@v1` (turn data, boolean). */
export function contextRestartDisabledKey(suffix: string): TypedKey<boolean> {
  return new TypedKey(`hookbox.context_restart_disabled.${suffix}@v1`, "turn_data", z.boolean());
}

export const HOOK_NAMES = ["beforeToolCall", "afterToolCall", "onToolError"] as const;
export const HOOK_ACTIONS = ["proceed", "skip", "deny", "abort", "retry", "fail"] as const;
export const ON_HOOK_ERROR = ["fail-closed", "fail-open", "abort-run"] as const;
export const RUN_STATUSES = ["completed", "failed", "aborted", "cancelled"] as const;
export const ERROR_CODES = [
  "SANDBOX_TIMEOUT", "SANDBOX_MEMORY", "SANDBOX_CRASHED", "SCRIPT_ERROR", "HOOK_CONTRACT", "SCRIPT_LOAD",
  "MAX_ITERATIONS", "RETRY_BUDGET",
] as const;
export const EVENT_TYPES = [
  "run-started", "inference-started", "inference-finished", "hook-decision", "tool-started", "tool-finished",
  "tool-retry", "context-restart", "debugger.pause", "debugger.continue", "log", "run-finished",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
export type RunStatus = (typeof RUN_STATUSES)[number];
export type HookName = (typeof HOOK_NAMES)[number];
export type EventType = (typeof EVENT_TYPES)[number];
