import type { HookboxEvent } from "../events/types.js";
import type { RunRecord } from "./types.js";

/** The closing event of a run cut off mid-phase; a resumed run continues with the next seq. */
export function interruptedEvent(run: RunRecord, reason: string): HookboxEvent {
  return {
    type: "run-finished",
    seq: run.lastSeq + 1,
    timestampMs: Date.now(),
    sessionId: run.sessionId,
    inferenceId: run.inferenceId,
    status: "interrupted",
    reason,
    iterations: run.iterations,
  };
}
