import type { HookboxEvent } from "../events/types.js";
import type { Store } from "../store/types.js";
import { isTerminal, type RunFeed } from "./run-feed.js";
import { onePerTick } from "./one-per-tick.js";

/** One read of stored events: at most this many, and stop after ~1 MiB of them. */
export const EVENT_PAGE = { limit: 256, maxBytes: 1024 * 1024 };

/**
 * A run's events with seq > afterSeq: first what the store committed, then live ones as they are
 * committed, with no gap and no duplicate (we subscribe before reading the store and skip seen seqs).
 * Ends after the final `run-finished`; an `interrupted` one ends the stream only if nothing follows it.
 */
export async function* readRunEvents(options: {
  store: Store;
  runId: string;
  afterSeq: number;
  feed: () => RunFeed | undefined;
  /** Stops waiting for live events (a reader that went away). */
  signal?: AbortSignal;
}): AsyncGenerator<HookboxEvent> {
  const { store, runId } = options;
  const queue: HookboxEvent[] = [];
  let wake: (() => void) | undefined;
  const feed = options.feed();
  const unsubscribe = feed?.subscribe((event) => {
    queue.push(event);
    wake?.();
  });
  const stop = () => wake?.();
  options.signal?.addEventListener("abort", stop, { once: true });
  try {
    let last = options.afterSeq;
    // Stored events come page by page: a reader of a huge run holds one bounded page at a time.
    const readPage = () => onePerTick(() => store.listEvents(runId, last, EVENT_PAGE));
    for (let page = await readPage(); page.length > 0; page = await readPage()) {
      for (const [index, event] of page.entries()) {
        yield event;
        last = event.seq;
        if (event.type !== "run-finished") continue;
        // A stored interrupted end is final only when nothing follows it and the run is not live again.
        const follows = index < page.length - 1 || (await store.listEvents(runId, last, { limit: 1 })).length > 0;
        if (isTerminal(event, feed !== undefined || follows)) return;
      }
    }
    if (!feed) return;
    while (!options.signal?.aborted) {
      while (queue.length > 0) {
        const event = queue.shift()!;
        if (event.seq <= last) continue;
        yield event;
        last = event.seq;
        if (event.type === "run-finished") return;
      }
      if (options.signal?.aborted) return;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    unsubscribe?.();
    options.signal?.removeEventListener("abort", stop);
  }
}
