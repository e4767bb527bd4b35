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
  | "MODEL"
  | "BUDGET"
  | "CANCELLED"
  | "DEADLINE"
  | "ABORTED"
  | "SESSION_BUSY"
  /** A session cannot be deleted while forks keep their history in its log; the message names them. */
  | "SESSION_FORKED"
  | "NOT_RESUMABLE"
  | "NOT_FOUND"
  | "STORE"
  /** A run went over one of its budgets (bytes, tool calls per inference); the reason names which. */
  | "RUN_BUDGET"
  /** The tenant's stored bytes would go over its store quota. */
  | "STORE_QUOTA"
  /** The store's filesystem (or database) is full: nothing was written; reads still work. */
  | "STORE_FULL"
  /** The database cannot be reached (a cluster store): nothing was written; the run is left to be taken over. */
  | "STORE_UNAVAILABLE"
  /** A write of a run by an owner that no longer holds it (another node resumed or took it over): refused. */
  | "LEASE_LOST"
  /**
   * A value crossing the sandbox's boundary is over its `maxPayloadBytes`: a call's payload going in, a result
   * coming out, a turn a middleware passes to next(). The message names the limit; nothing of the value ran or was kept.
   */
  | "PAYLOAD_TOO_LARGE"
  /** A bug in the host itself surfaced in this run; the run fails, the host goes on. */
  | "HOST_FAULT"
  /** The sandbox wall was required and cannot be had on this machine. */
  | "WALL_UNAVAILABLE"
  /** An uploaded script version failed bundling, its type check or its trial load. */
  | "SCRIPT_INVALID"
  /** A run's model settings cannot be sent (a tool choice naming no offered tool, a middleware's malformed settings). */
  | "MODEL_SETTINGS"
  /** A configured tenant's runtime (its scripts, host tools or models) failed to load; other tenants are served. */
  | "TENANT_UNAVAILABLE"
  /** The tenant was taken out of the server's config by a reload while its request was in flight: its keys no longer work. */
  | "TENANT_REMOVED";

export interface SerializedError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** Longest problem text a contract error repeats (a zod message can list every unknown key of a huge object). */
const MAX_PROBLEM_CHARS = 300;

/** Hook return outside its contract: names the script, the hook and the JSON path of the bad field. */
export function hookContractError(script: string, hook: string, path: string, problem: string): HookboxError {
  const shown = path.length > MAX_PROBLEM_CHARS ? `${path.slice(0, MAX_PROBLEM_CHARS)}...` : path || "$";
  const said = problem.length > MAX_PROBLEM_CHARS ? `${problem.slice(0, MAX_PROBLEM_CHARS)}... (${problem.length} chars)` : problem;
  return new HookboxError("HOOK_CONTRACT", `${script}: ${hook} returned a value outside its contract at ${shown}: ${said}`, {
    script,
    hook,
    path: shown,
  });
}

export function isHookboxError(value: unknown): value is HookboxError {
  return value instanceof HookboxError;
}
