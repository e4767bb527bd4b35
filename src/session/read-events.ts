import type { HookboxEvent, LiveEvent, TextDeltaEvent } from "../events/types.js";
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
  /**
   * Also the run's text deltas that are published while the reader follows it live, each where it came
   * (docs/events.md, "Live text"); one the reader has already passed (its inference finished) is dropped.
   */
  textDeltas?: boolean;
}

/** A text delta as a stream of JSON texts carries it: no seq (SSE sends it without an `id:`). */
export interface LiveDeltaText {
  seq?: undefined;
  type: "text-delta";
  json: string;
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

/** What a live reader may be handed besides the events: a text delta, and the last seq published before it. */
type Queued = { event: HookboxEvent } | { delta: TextDeltaEvent; afterSeq: number };

/** Where a queued item belongs: an event at its seq, a delta right after the event it followed. */
const queuedSeq = (queued: Queued): number => ("delta" in queued ? queued.afterSeq : queued.event.seq);

/**
 * A run's events with seq > afterSeq: first what the store committed, then live ones as they are
 * committed, with no gap and no duplicate (we subscribe before reading the store and skip seen seqs).
 * Ends after the final `run-finished`; an `interrupted` one ends the stream only if nothing follows it.
 */
export function readRunEvents(options: ReadRunEventsOptions & { textDeltas?: false }): AsyncGenerator<HookboxEvent>;
export function readRunEvents(options: ReadRunEventsOptions): AsyncGenerator<LiveEvent>;
export function readRunEvents(options: ReadRunEventsOptions): AsyncGenerator<LiveEvent> {
  return readRunItems<HookboxEvent, TextDeltaEvent>(options, (delta) => delta, {
    page: (afterSeq, page) => options.store.listEvents(options.runId, afterSeq, page),
    fromLive: (event) => event,
    status: (event) => (event.type === "run-finished" ? event.status : undefined),
    chars: (event) => JSON.stringify(event).length,
  });
}

/** The same events as JSON text: stored ones are passed on as stored, never parsed (SSE). */
export function readRunEventTexts(options: ReadRunEventsOptions): AsyncGenerator<StoredEventText | LiveDeltaText> {
  return readRunItems<StoredEventText, LiveDeltaText>(options, (delta) => ({ type: "text-delta", json: JSON.stringify(delta) }), {
    page: (afterSeq, page) => options.store.listEventTexts(options.runId, afterSeq, page),
    fromLive: (event) => ({ seq: event.seq, type: event.type, json: eventJson(event) }),
    status: (item) => (JSON.parse(item.json) as { status?: string }).status,
    chars: (item) => item.json.length,
  });
}

async function* readRunItems<T extends { seq: number; type: string }, D extends { type: "text-delta" }>(
  options: ReadRunEventsOptions,
  fromDelta: (delta: TextDeltaEvent) => D,
  source: ItemSource<T>,
): AsyncGenerator<T | D> {
  const queue: Queued[] = [];
  let wake: (() => void) | undefined;
  const feed = options.feed();
  const unsubscribe = feed?.subscribe((event) => {
    queue.push({ event });
    wake?.();
  });
  const unsubscribeDeltas = options.textDeltas
    ? feed?.subscribeDeltas((delta, afterSeq) => {
        queue.push({ delta, afterSeq });
        wake?.();
      })
    : undefined;
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
    const caughtUp = () => feed !== undefined && queue.length > 0 && "event" in queue[0] && queue[0].event.seq <= last + 1;
    for (let page = await readPage(); page.length > 0; page = caughtUp() ? [] : await readPage()) {
      for (const [index, item] of page.entries()) {
        yield item;
        last = item.seq;
        // Live items up to here were read from the store; a delta that came right after this event goes now.
        while (queue.length > 0 && queuedSeq(queue[0]) <= last) {
          const queued = queue.shift()!;
          if ("delta" in queued && queued.afterSeq === last) yield fromDelta(queued.delta);
        }
        if (item.type !== "run-finished") continue;
        // A stored interrupted end is final only when nothing follows it and the run is not live again.
        const follows = index < page.length - 1 || (await options.store.listEvents(options.runId, last, { limit: 1 })).length > 0;
        if (isTerminal({ type: item.type, status: source.status(item) }, feed !== undefined || follows)) return;
      }
    }
    if (!feed) return;
    while (!options.signal?.aborted) {
      while (queue.length > 0) {
        const queued = queue.shift()!;
        if ("delta" in queued) {
          // A delta belongs right after the event it followed; a reader already past that event (it read the
          // finished inference from the store) has the whole text.
          if (queued.afterSeq === last) yield fromDelta(queued.delta);
          continue;
        }
        const event = queued.event;
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
    unsubscribeDeltas?.();
    options.signal?.removeEventListener("abort", stop);
  }
}
