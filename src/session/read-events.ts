import type { HookboxEvent } from "../events/types.js";
import type { PageOptions, StoredEventText, Store } from "../store/types.js";
import { isTerminal, type RunFeed } from "./run-feed.js";
import { onePerTick } from "./one-per-tick.js";
import { eventJson } from "../events/event-json.js";

/** One read of stored events: at most this many, and stop after ~1 MiB of them. */
export const EVENT_PAGE = { limit: 256, maxBytes: 1024 * 1024 };

export interface ReadRunEventsOptions {
  store: Store;
  runId: string;
  afterSeq: number;
  feed: () => RunFeed | undefined;
  /** Stops waiting for live events (a reader that went away). */
  signal?: AbortSignal;
  /**
   * Called with the JSON characters of each page of stored events before it is handed out: a server charges
   * them to the reader's tenant and may make the reader wait (live events are not charged).
   */
  pace?: (chars: number) => Promise<void>;
}

/** How one kind of item is read from the store and made from a live event. */
interface ItemSource<T extends { seq: number; type: string }> {
  page(afterSeq: number, page: PageOptions): Promise<T[]>;
  fromLive(event: HookboxEvent): T;
  /** The status of a `run-finished` item. */
  status(item: T): string | undefined;
  /** The JSON characters of an item (what a page is charged). */
  chars(item: T): number;
}

/**
 * A run's events with seq > afterSeq: first what the store committed, then live ones as they are
 * committed, with no gap and no duplicate (we subscribe before reading the store and skip seen seqs).
 * Ends after the final `run-finished`; an `interrupted` one ends the stream only if nothing follows it.
 */
export function readRunEvents(options: ReadRunEventsOptions): AsyncGenerator<HookboxEvent> {
  return readRunItems(options, {
    page: (afterSeq, page) => options.store.listEvents(options.runId, afterSeq, page),
    fromLive: (event) => event,
    status: (event) => (event.type === "run-finished" ? event.status : undefined),
    chars: (event) => JSON.stringify(event).length,
  });
}

/** The same events as JSON text: stored ones are passed on as stored, never parsed (SSE). */
export function readRunEventTexts(options: ReadRunEventsOptions): AsyncGenerator<StoredEventText> {
  return readRunItems(options, {
    page: (afterSeq, page) => options.store.listEventTexts(options.runId, afterSeq, page),
    fromLive: (event) => ({ seq: event.seq, type: event.type, json: eventJson(event) }),
    status: (item) => (JSON.parse(item.json) as { status?: string }).status,
    chars: (item) => item.json.length,
  });
}

async function* readRunItems<T extends { seq: number; type: string }>(
  options: ReadRunEventsOptions,
  source: ItemSource<T>,
): AsyncGenerator<T> {
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
    // Stored events come page by page, one page per turn of the event loop: a reader of a huge run holds
    // one bounded page at a time, and many readers take turns with everyone else.
    const readPage = async () => {
      const page = await onePerTick(() => source.page(last, EVENT_PAGE));
      if (options.pace && page.length > 0) await options.pace(page.reduce((sum, item) => sum + source.chars(item), 0));
      return page;
    };
    // A live run's reader leaves the store as soon as the feed has the event after the last one read: from
    // there on every event reaches it live, and reading on would only re-read what the feed brings anyway.
    const caughtUp = () => feed !== undefined && queue.length > 0 && queue[0].seq <= last + 1;
    for (let page = await readPage(); page.length > 0; page = caughtUp() ? [] : await readPage()) {
      for (const [index, item] of page.entries()) {
        yield item;
        last = item.seq;
        if (item.type !== "run-finished") continue;
        // A stored interrupted end is final only when nothing follows it and the run is not live again.
        const follows = index < page.length - 1 || (await options.store.listEvents(options.runId, last, { limit: 1 })).length > 0;
        if (isTerminal({ type: item.type, status: source.status(item) }, feed !== undefined || follows)) return;
      }
    }
    if (!feed) return;
    while (!options.signal?.aborted) {
      while (queue.length > 0) {
        const event = queue.shift()!;
        if (event.seq <= last) continue;
        yield source.fromLive(event);
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
