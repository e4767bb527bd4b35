import type { ErrorCode } from "./turns/keys.gen.js";

/**
 * Every failure the host reports carries a stable `code` (the event `errorCode`s of docs/events.md) that
 * survives the worker-process boundary: errors cross as `{code, message, details}` and are rebuilt by
 * sandbox/call-errors.ts.
 */
export class HookboxError extends Error {
  constructor(
    readonly code: ErrorCode | HostErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "HookboxError";
  }

  toJSON(): SerializedError {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/** Host-side codes beyond the contract's sandbox codes. */
export type HostErrorCode =
  | "USAGE"
  | "CONFIG"
  | "SANDBOX_OVERLOADED"
  | "TOOL_TIMEOUT"
  | "TOOL_ERROR"
  | "TOOL_ARGS"
  | "UNKNOWN_TOOL"
  | "MIDDLEWARE"
  | "ENGINE"
  | "CANCELLED"
  | "DEADLINE"
  | "ABORTED"
  | "SESSION_BUSY"
  | "NOT_RESUMABLE"
  | "NOT_FOUND"
  | "STORE"
  | "SCRIPT_INVALID";

export interface SerializedError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** Hook return outside its contract: names the script, the hook and the JSON path of the bad field. */
export function hookContractError(script: string, hook: string, path: string, problem: string): HookboxError {
  return new HookboxError("HOOK_CONTRACT", `${script}: ${hook} returned a value outside its contract at ${path || "$"}: ${problem}`, {
    script,
    hook,
    path,
  });
}

export function isHookboxError(value: unknown): value is HookboxError {
  return value instanceof HookboxError;
}
