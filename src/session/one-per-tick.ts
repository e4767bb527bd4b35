/*
 * Reads of big stored values (a page of events, a session's latest turn) run one per turn of the event loop,
 * in arrival order: six readers of a big run then take six turns, and /healthz, the other tenants' requests
 * and their runs get the loop between them, instead of waiting behind all six reads at once.
 */

let tail: Promise<unknown> = Promise.resolve();

/** Runs `read` once the reads queued before it have run, each in a later turn of the event loop. */
export function onePerTick<T>(read: () => T | Promise<T>): Promise<T> {
  const result = tail.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(read);
  tail = result.catch(() => undefined);
  return result;
}

/** Yields `text` in slices of `sliceChars`, one slice per turn of the event loop (a big response body). */
export function textSlices(text: string, sliceChars = 256 * 1024): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let at = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (at >= text.length) return controller.close();
      if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      controller.enqueue(encoder.encode(text.slice(at, at + sliceChars)));
      at += sliceChars;
    },
  });
}
