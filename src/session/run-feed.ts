import type { TextDeltaEvent } from "../events/types.js";
import { isInterruption, isRunEnd } from "../store/interrupted.js";
import { AnswerSoFar } from "../events/answer-so-far.js";
import type { EventWithText } from "../events/event-json.js";

/** Told each published event with its JSON text (the same object for every listener: never to be changed). */
type Listener = (entry: EventWithText) => void;
/** `afterSeq`: the last event published before the delta (the delta belongs right after it). */
type DeltaListener = (event: TextDeltaEvent, afterSeq: number) => void;

/** How many of a run's latest published events its feed keeps, and their JSON characters at most. */
export const RECENT_EVENTS = { limit: 128, maxChars: 128 * 1024 };

/**
 * Live fan-out of one run's committed events, and of its text deltas, to readers in this process (SSE streams,
 * CLI printers). `close()` tells its readers that no more events come through it (the run left this process:
 * another node took it over), so they go on reading from the store. It keeps the run's latest published events
 * (RECENT_EVENTS, from where it started), so a reader that joins the live run takes what it missed from here
 * instead of reading back from the store what this process has just written.
 */
export class RunFeed {
  private readonly listeners = new Set<Listener>();
  private readonly deltaListeners = new Set<DeltaListener>();
  private readonly closeListeners = new Set<() => void>();
  private readonly answer = new AnswerSoFar();
  private closed = false;
  /** Published events with consecutive seqs, the last one `lastSeq`: those kept for a reader that joins. */
  private readonly recent: EventWithText[] = [];
  private recentChars = 0;

  /** `lastSeq`: the run's committed seq when the feed starts (a resumed run's). */
  constructor(private lastSeq = 0) {}

  /**
   * The published events after `afterSeq`, oldest first, or undefined when the feed no longer keeps all of them
   * (the reader reads those from the store). A reader that subscribes in the same turn of the event loop gets
   * every later event live: together, no gap and no duplicate.
   */
  eventsAfter(afterSeq: number): EventWithText[] | undefined {
    if (afterSeq >= this.lastSeq) return [];
    const first = this.lastSeq - this.recent.length + 1;
    if (afterSeq + 1 < first) return undefined;
    return this.recent.slice(afterSeq + 1 - first);
  }

  subscribe(listener: Listener, onClose?: () => void): () => void {
    this.listeners.add(listener);
    if (onClose) {
      if (this.closed) queueMicrotask(onClose);
      else this.closeListeners.add(onClose);
    }
    return () => {
      this.listeners.delete(listener);
      if (onClose) this.closeListeners.delete(onClose);
    };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** A listener that joins mid-answer hears the answer so far at once, then each delta. */
  subscribeDeltas(listener: DeltaListener): () => void {
    const sofar = this.answer.catchUp();
    if (sofar) guard(this.lastSeq, () => listener(sofar, this.lastSeq));
    this.deltaListeners.add(listener);
    return () => this.deltaListeners.delete(listener);
  }

  /** A listener that throws is a reader's bug: it is logged and never stops the run or the other readers. */
  publish(entry: EventWithText): void {
    this.keep(entry);
    this.lastSeq = Math.max(this.lastSeq, entry.seq);
    this.answer.observe(entry.event);
    for (const listener of this.listeners) {
      try {
        listener(entry);
      } catch (error) {
        readerFailed(entry.seq, error);
      }
    }
  }

  publishDelta(event: TextDeltaEvent): void {
    this.answer.add(event);
    for (const listener of this.deltaListeners) guard(this.lastSeq, () => listener(event, this.lastSeq));
  }

  /** Keeps the event if it follows the last one published (anything else starts the kept events over after it). */
  private keep(entry: EventWithText): void {
    if (entry.seq !== this.lastSeq + 1) {
      this.recent.length = 0;
      this.recentChars = 0;
      return;
    }
    this.recent.push(entry);
    this.recentChars += entry.json.length;
    while (this.recent.length > RECENT_EVENTS.limit || (this.recentChars > RECENT_EVENTS.maxChars && this.recent.length > 0))
      this.recentChars -= this.recent.shift()!.json.length;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const onClose of this.closeListeners) onClose();
    this.closeListeners.clear();
  }
}

function guard(seq: number, call: () => void): void {
  try {
    call();
  } catch (error) {
    readerFailed(seq, error);
  }
}

function readerFailed(seq: number, error: unknown): void {
  process.stderr.write(`hookbox: an event reader failed on event ${seq}: ${(error as Error)?.message ?? String(error)}\n`);
}

/**
 * True when no more events of this run will follow: its `run-finished`, or an interruption when nothing can
 * resume it behind the reader's back (the run is not live, and nothing follows it in the store).
 */
export function isTerminal(event: { type: string; status?: unknown }, live: boolean): boolean {
  return isRunEnd(event) || (isInterruption(event) && !live);
}
