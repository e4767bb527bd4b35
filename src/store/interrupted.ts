import type { HookboxEvent } from "../events/types.js";
import { HookboxError } from "../errors.js";
import type { RunRecord, StoredRunStatus } from "./types.js";

/*
 * The events a store writes itself around a run's interruptions: `run-interrupted` when a run is cut off
 * (its process died, a drain, a lost lease), `run-resumed` when a resume or a takeover goes on after it. Both
 * take the next seq, so one run has one gap-free sequence however often it was interrupted.
 */

/** The event that marks a run cut off mid-phase; a resumed run continues after it. */
export function interruptedEvent(run: RunRecord, reason: string): HookboxEvent {
  return {
    type: "run-interrupted",
    seq: run.lastSeq + 1,
    timestampMs: Date.now(),
    sessionId: run.sessionId,
    inferenceId: run.inferenceId,
    reason,
    iterations: run.iterations,
  };
}

/** The first event of a resumed (or taken over) run, after its interruption. */
export function resumedEvent(run: RunRecord, options: { iterations: number; node?: string }): HookboxEvent {
  return {
    type: "run-resumed",
    seq: run.lastSeq + 1,
    timestampMs: Date.now(),
    sessionId: run.sessionId,
    inferenceId: run.inferenceId,
    ...(options.node !== undefined ? { node: options.node } : {}),
    iterations: options.iterations,
  };
}

/**
 * True for an event that cuts a run off without ending it: `run-interrupted`, or the `run-finished {status:
 * "interrupted"}` that stores written before `run-interrupted` existed hold.
 */
export function isInterruption(event: { type: string; status?: unknown }): boolean {
  return event.type === "run-interrupted" || (event.type === "run-finished" && event.status === "interrupted");
}

/** True for the run's real end: a `run-finished` that is not an old store's interruption. */
export function isRunEnd(event: { type: string; status?: unknown }): boolean {
  return event.type === "run-finished" && event.status !== "interrupted";
}

/** What an event does to its run's stored status: a `run-finished` ends it, a `run-interrupted` cuts it off. */
export interface RunStatusChange {
  status: StoredRunStatus;
  reason?: string;
  errorCode?: string;
  iterations: number;
  finishedMs: number;
}

export function runStatusChange(event: HookboxEvent): RunStatusChange | undefined {
  if (event.type === "run-interrupted")
    return { status: "interrupted", reason: event.reason, iterations: event.iterations, finishedMs: event.timestampMs };
  if (event.type !== "run-finished") return undefined;
  return {
    status: event.status,
    ...(event.reason !== undefined ? { reason: event.reason } : {}),
    ...(event.errorCode !== undefined ? { errorCode: event.errorCode } : {}),
    iterations: event.iterations,
    finishedMs: event.timestampMs,
  };
}

/** The error of a write by an owner whose epoch has passed: another process resumed or took over the run. */
export function leaseLostError(runId: string, epoch: number, current: number): HookboxError {
  return new HookboxError(
    "LEASE_LOST",
    `run ${runId} is no longer this owner's (its epoch ${epoch} was followed by ${current}: another node resumed or took it over); the write was refused`,
    { runId, epoch, current },
  );
}

/** The error of a resume of a run that is not interrupted (or not there). */
export function notResumable(runId: string, status: string | undefined): HookboxError {
  return status === undefined
    ? new HookboxError("NOT_RESUMABLE", `there is no run ${runId} to resume`, { runId })
    : new HookboxError("NOT_RESUMABLE", `run ${runId} is ${status}, not interrupted; only an interrupted run can be resumed`, {
        runId,
        status,
      });
}
