import { HookboxError } from "../errors.js";
import type { CallOutcome, PendingCall } from "./tool-call.js";

/**
 * Runs calls with at most `limit` at once; outcomes come back in call order. An abort stops the batch, and so
 * does a call that throws (a run budget, a store quota): the calls still running are aborted, none is started,
 * and the error is thrown once the batch has stopped.
 */
export async function runBatch(
  calls: PendingCall[],
  limit: number,
  runSignal: AbortSignal,
  execute: (call: PendingCall, signal: AbortSignal) => Promise<CallOutcome>,
): Promise<CallOutcome[]> {
  const batch = new AbortController();
  const onRunAbort = () => batch.abort(runSignal.reason);
  runSignal.addEventListener("abort", onRunAbort, { once: true });
  const outcomes: CallOutcome[] = new Array(calls.length);
  let nextIndex = 0;
  let aborted: CallOutcome | undefined;
  let thrown: { error: unknown } | undefined;
  const worker = async () => {
    while (nextIndex < calls.length && !batch.signal.aborted) {
      const index = nextIndex++;
      try {
        const outcome = await execute(calls[index], batch.signal);
        outcomes[index] = outcome;
        if (outcome.kind === "abort" && !aborted) {
          aborted = outcome;
          batch.abort(new HookboxError("ABORTED", outcome.reason));
        }
      } catch (error) {
        if (batch.signal.aborted) continue;
        thrown = { error };
        batch.abort(error);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, calls.length)) }, worker));
  } finally {
    runSignal.removeEventListener("abort", onRunAbort);
  }
  if (runSignal.aborted) throw runSignal.reason;
  if (thrown) throw thrown.error;
  return aborted ? [aborted] : outcomes;
}
