import type { HookboxEvent, LiveEvent, TextDeltaEvent } from "../events/types.js";
import type { PageOptions, StoredEventText, Store } from "../store/types.js";
import { isTerminal, type RunFeed } from "./run-feed.js";
import { onePerTick } from "./one-per-tick.js";
import { withEventJson, type EventWithText } from "../events/event-json.js";
import { isInterruption, isRunEnd } from "../store/interrupted.js";

/** One read of stored events: at most this many, and stop after ~1 MiB of them. */
export const EVENT_PAGE = { limit: 256, maxBytes: 1024 * 1024 };

/** How often a reader of a run that executes on another node reads the store when no wake-up came (a lost notification). */
export const CLUSTER_POLL_MS = 1000;

/** What a reader of a run's stored events may give (SessionManager.eventTexts). */
export interface EventReaderOptions {
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
   * Deltas come from the node the run executes on: a reader on another node gets the committed events only.
   */
  textDeltas?: boolean;
}

/** A text delta as a stream of JSON texts carries it: no seq (SSE sends it without an `id:`). */
export interface LiveDeltaText {
  seq?: undefined;
  type: "text-delta";
  json: string;
}

export interface ReadRunEventsOptions extends EventReaderOptions {
  store: Store;
  runId: string;
  afterSeq: number;
  feed: () => RunFeed | undefined;
}

/** How one kind of item is read from the store and made from a live event. */
interface ItemSource<T extends { seq: number; type: string }> {
  page(afterSeq: number, page: PageOptions): Promise<T[]>;
  fromLive(entry: EventWithText): T;
  /** The status of a `run-finished` item. */
  status(item: T): string | undefined;
  /** The JSON characters of an item (what a page is charged). */
  chars(item: T): number;
}

/** What a live reader is handed: an event with its text as published, or a text delta and the last seq published before it. */
type Queued = EventWithText | { delta: TextDeltaEvent; afterSeq: number };

/** Where a queued item belongs: an event at its seq, a delta right after the event it followed. */
const queuedSeq = (queued: Queued): number => ("delta" in queued ? queued.afterSeq : queued.seq);

/**
 * A run's events with seq > afterSeq: first what the store committed, then live ones as they are
 * committed, with no gap and no duplicate (we subscribe before reading the store and skip seen seqs).
 * Ends after the run's `run-finished`; an interruption (`run-interrupted`) ends it only when nothing follows
 * it and the run is not live again. On a cluster store, a run that executes on another node (or moves to one)
 * is followed in the store, woken by the nodes' commit notifications.
 */
export function readRunEvents(options: ReadRunEventsOptions & { textDeltas?: false }): AsyncGenerator<HookboxEvent>;
export function readRunEvents(options: ReadRunEventsOptions): AsyncGenerator<LiveEvent>;
export function readRunEvents(options: ReadRunEventsOptions): AsyncGenerator<LiveEvent> {
  return oneByOne(
    readRunItems<HookboxEvent, TextDeltaEvent>(options, (delta) => delta, {
      page: (afterSeq, page) => options.store.listEvents(options.runId, afterSeq, page),
      // A reader of objects finds the text the event was published with (eventJson: --json prints it).
      fromLive: (entry) => withEventJson(entry.event, entry.json),
      status: (event) => (event.type === "run-finished" ? event.status : undefined),
      chars: (event) => JSON.stringify(event).length,
    }),
  );
}

/** The same events as JSON text: stored ones are passed on as stored, never parsed. */
export function readRunEventTexts(options: ReadRunEventsOptions): AsyncGenerator<StoredEventText | LiveDeltaText> {
  return oneByOne(readRunEventTextBatches(options));
}

/**
 * The same texts in order, handed out as they come: a page of stored ones, or the live ones committed since the
 * reader last woke (SSE). Per item, an async iterator costs the reader a promise and a step of the generator;
 * a run's live events come a few at a time, with each phase's commit.
 */
export function readRunEventTextBatches(options: ReadRunEventsOptions): AsyncGenerator<(StoredEventText | LiveDeltaText)[]> {
  return readRunItems<StoredEventText, LiveDeltaText>(options, (delta) => ({ type: "text-delta", json: JSON.stringify(delta) }), {
    page: (afterSeq, page) => options.store.listEventTexts(options.runId, afterSeq, page),
    // The published entry itself (its seq, type and text): no copy per reader.
    fromLive: (entry) => entry,
    status: (item) => (item.type === "run-finished" ? (JSON.parse(item.json) as { status?: string }).status : undefined),
    chars: (item) => item.json.length,
  });
}

async function* oneByOne<T>(batches: AsyncGenerator<T[]>): AsyncGenerator<T> {
  for await (const batch of batches) yield* batch;
}

/** The run's items after `afterSeq`, in order, in batches (never an empty one). */
async function* readRunItems<T extends { seq: number; type: string }, D extends { type: "text-delta" }>(
  options: ReadRunEventsOptions,
  fromDelta: (delta: TextDeltaEvent) => D,
  source: ItemSource<T>,
): AsyncGenerator<(T | D)[]> {
  const queue: Queued[] = [];
  let wake: (() => void) | undefined;
  const alarm = () => wake?.();
  let feed: RunFeed | undefined;
  let unsubscribe: (() => void) | undefined;
  let unsubscribeDeltas: (() => void) | undefined;
  const follow = (local: RunFeed) => {
    feed = local;
    unsubscribe = local.subscribe((entry) => {
      queue.push(entry);
      alarm();
    }, alarm);
    unsubscribeDeltas = options.textDeltas
      ? local.subscribeDeltas((delta, afterSeq) => {
          queue.push({ delta, afterSeq });
          alarm();
        })
      : undefined;
  };
  const unfollow = () => {
    unsubscribe?.();
    unsubscribeDeltas?.();
    unsubscribe = unsubscribeDeltas = feed = undefined;
    queue.length = 0;
  };
  let last = options.afterSeq;
  const initial = options.feed();
  // A live run's feed usually still has every event after `last`: they are taken from it, not read back from
  // the store (and charged as a stored page would be), with the live ones queued after them.
  const backlog = initial && !initial.isClosed ? initial.eventsAfter(last) : undefined;
  if (initial) follow(initial);
  if (backlog?.length) queue.unshift(...backlog);
  let backlogTaken = backlog !== undefined;
  const cluster = options.store.cluster;
  const unwatch = cluster?.watchRun(options.runId, alarm);
  options.signal?.addEventListener("abort", alarm, { once: true });
  const sleep = (ms?: number) =>
    new Promise<void>((resolve) => {
      const awake = () => {
        wake = undefined;
        clearTimeout(timer);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(awake, ms);
      wake = awake;
    });
  const live = () => feed !== undefined && !feed.isClosed;
  // Stored events come page by page, one page per turn of the event loop: a reader of a huge run holds
  // one bounded page at a time, and many readers take turns with everyone else.
  const readPage = async () => {
    const page = await onePerTick(() => source.page(last, EVENT_PAGE));
    if (options.pace && page.length > 0) await options.pace(page.reduce((sum, item) => sum + source.chars(item), 0));
    return page;
  };
  // A live run's reader leaves the store as soon as the feed has the event after the last one read: from
  // there on every event reaches it live, and reading on would only re-read what the feed brings anyway.
  const caughtUp = () => live() && queue.length > 0 && !("delta" in queue[0]) && queue[0].seq <= last + 1;
  /** Yields the stored events after `last`, a page at a time; true once the run's end (or an interruption nothing resumes) was read. */
  async function* stored(): AsyncGenerator<(T | D)[], boolean> {
    // The first time, with the feed's backlog taken, every event after `last` comes from the feed.
    const fromFeed = backlogTaken;
    backlogTaken = false;
    for (let page = fromFeed || caughtUp() ? [] : await readPage(); page.length > 0; page = caughtUp() ? [] : await readPage()) {
      let batch: (T | D)[] = [];
      for (const [index, item] of page.entries()) {
        batch.push(item);
        last = item.seq;
        // Live items up to here were read from the store; a delta that came right after this event goes now.
        while (queue.length > 0 && queuedSeq(queue[0]) <= last) {
          const queued = queue.shift()!;
          if ("delta" in queued && queued.afterSeq === last) batch.push(fromDelta(queued.delta));
        }
        const status = source.status(item);
        if (isRunEnd({ type: item.type, status })) {
          yield batch;
          return true;
        }
        if (!isInterruption({ type: item.type, status })) continue;
        // An interruption is final only when nothing follows it and the run is not live again; what was read
        // goes out before the store is asked.
        yield batch;
        batch = [];
        const follows = index < page.length - 1 || (await options.store.listEvents(options.runId, last, { limit: 1 })).length > 0;
        if (follows || live()) continue;
        if (!cluster || (await options.store.getRun(options.runId))?.status !== "running") return true;
      }
      if (batch.length > 0) yield batch;
    }
    return false;
  }
  try {
    if (backlog?.length && options.pace) await options.pace(backlog.reduce((sum, entry) => sum + entry.json.length, 0));
    if (yield* stored()) return;
    for (;;) {
      if (options.signal?.aborted) return;
      if (live()) {
        // Live in this process: events as its writer commits them, and its text deltas, all queued since the
        // last wake-up in one batch.
        while (queue.length > 0) {
          const batch: (T | D)[] = [];
          let ended = false;
          for (const queued of queue.splice(0)) {
            if ("delta" in queued) {
              // A delta belongs right after the event it followed; a reader already past that event (it read the
              // finished inference from the store) has the whole text.
              if (queued.afterSeq === last) batch.push(fromDelta(queued.delta));
              continue;
            }
            if (queued.seq <= last) continue;
            batch.push(source.fromLive(queued));
            last = queued.seq;
            if (isTerminal(queued.event, false)) {
              ended = true;
              break;
            }
          }
          if (batch.length > 0) yield batch;
          if (ended) return;
        }
        if (options.signal?.aborted) return;
        if (!live()) continue;
        await sleep();
        continue;
      }
      if (!cluster) return;
      // The run executes on another node (or left this one): the store is the truth, a notification the wake-up.
      if (feed) unfollow();
      await sleep(CLUSTER_POLL_MS);
      if (options.signal?.aborted) return;
      if (yield* stored()) return;
      // The run may have come to this process meanwhile (a takeover here): follow its feed again.
      const local = options.feed();
      if (local && !local.isClosed) {
        follow(local);
        if (yield* stored()) return;
      }
    }
  } finally {
    unsubscribe?.();
    unsubscribeDeltas?.();
    unwatch?.();
    options.signal?.removeEventListener("abort", alarm);
  }
}
