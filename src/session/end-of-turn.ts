/*
 * Work put off to the end of this turn of the event loop, for many owners with one Immediate. A run's writer
 * hands what it gathered to the store at the end of the turn (persistence.ts) and an event stream sends what was
 * queued in the turn as one chunk (src/server/sse-body.ts): each with an Immediate of its own, serve made ~25 a
 * run, each an object, a callback and a step of Node's immediate queue. One Immediate now runs every callback put
 * off before it ran, in the order they were put off; one put off while it runs goes to the next turn's.
 */

let waiting: (() => void)[] = [];

/** Runs `callback` at the end of this turn of the event loop (where setImmediate would), after those put off before it. */
export function atEndOfTurn(callback: () => void): void {
  waiting.push(callback);
  if (waiting.length === 1) setImmediate(runWaiting);
}

function runWaiting(): void {
  const callbacks = waiting;
  waiting = [];
  let failure: { error: unknown } | undefined;
  for (const callback of callbacks) {
    // One owner's fault does not keep the others' work from running; it is thrown as its own Immediate's would be.
    try {
      callback();
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure) throw failure.error;
}
