import { HookboxError } from "../errors.js";

/**
 * Why a worker went away. A watchdog's kill (`killed-overdue`: no reply in time; `killed-memory`: the
 * worker's processes grew past the limit while a message ran) names the exec message it blames in
 * `culpritSeq`, and its tenant.
 */
export interface WorkerExit {
  reason: "killed-overdue" | "killed-memory" | "crashed" | "retired" | "closed";
  culpritSeq?: number;
  culpritTenant?: string;
  detail: string;
}

/** The error of the call a watchdog blamed for a worker's kill. */
export function culpritError(exit: WorkerExit, what: string, details: Record<string, unknown>): HookboxError {
  return exit.reason === "killed-memory"
    ? new HookboxError(
        "SANDBOX_MEMORY",
        `${what} went over the sandbox worker's memory limit (${exit.detail}); the worker was killed`,
        details,
      )
    : new HookboxError(
        "SANDBOX_TIMEOUT",
        `${what} did not yield within its limit (${exit.detail}); the sandbox worker was killed`,
        details,
      );
}

/** The error of an exec message in flight on a worker that went away: the blamed one's, or a crash. */
export function lostExecError(exit: WorkerExit, seq: number, details: { worker: number | undefined; started: boolean }): HookboxError {
  if (seq === exit.culpritSeq) return culpritError(exit, "guest code", details);
  return new HookboxError("SANDBOX_CRASHED", `sandbox worker was lost (${exit.detail}); the call failed closed`, details);
}
