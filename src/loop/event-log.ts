import type { EventBody, HookboxEvent, LiveEvent, TextDeltaEvent } from "../events/types.js";
import { withEventJson } from "../events/event-json.js";
import { AnswerSoFar } from "../events/answer-so-far.js";

export interface EventLogOptions {
  /** Sees each event, with its JSON text, before any reader (persistence). */
  sink?: (event: HookboxEvent, json: string) => void;
  /** Sees each text delta (persistence passes it on to live readers after the events before it). */
  liveSink?: (event: TextDeltaEvent) => void;
  /** Decides whether an event is recorded at all (the run's byte budget, from its JSON text); a refused one gets no seq and no reader sees it. */
  admit?: (event: HookboxEvent, json: string) => boolean;
  firstSeq?: number;
}

/** A text delta waiting for a reader, with how many events the log held when it came (it follows those). */
interface QueuedDelta {
  after: number;
  event: TextDeltaEvent;
}

/**
 * The run's event stream: stamps seq (gap-free), time and ids, hands each event to the persistence
 * sink before any reader sees it, and serves replay-then-live async iteration. Text deltas are live only:
 * never stored, handed to the readers iterating at that moment; one joining mid-answer first gets the answer so
 * far (docs/events.md, "Live text").
 */
export class EventLog {
  private readonly events: HookboxEvent[] = [];
  /** Each event's JSON text, at the same index. */
  private readonly texts: string[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly deltaReaders = new Set<(queued: QueuedDelta) => void>();
  private readonly answer = new AnswerSoFar();
  private closed = false;
  private nextSeq: number;

  constructor(
    private readonly ids: { sessionId: string; inferenceId: string },
    private readonly options: EventLogOptions = {},
  ) {
    this.nextSeq = options.firstSeq ?? 1;
  }

  /**
   * Records `body`, which becomes the event: it is stamped in place (seq, time, ids after its own fields), not
   * copied, so a caller hands over a fresh object and never touches it again (four or more events per tool call).
   */
  emit(body: EventBody): HookboxEvent {
    if (this.closed) throw new Error(`event after run-finished: ${body.type}`);
    const event = body as HookboxEvent;
    event.seq = this.nextSeq;
    event.timestampMs = Date.now();
    event.sessionId = this.ids.sessionId;
    event.inferenceId = this.ids.inferenceId;
    // Its JSON text is made once, here: the budget counts it, the store writes it, stream readers and --json send it.
    const json = JSON.stringify(event);
    if (this.options.admit && !this.options.admit(event, json)) return event;
    this.nextSeq += 1;
    this.options.sink?.(event, json);
    this.events.push(event);
    this.texts.push(json);
    this.answer.observe(event);
    if (event.type === "run-finished") this.closed = true;
    this.wake();
    return event;
  }

  /** A piece of the model's text as it streams: to live readers only, never stored, no seq. */
  live(body: Omit<TextDeltaEvent, "timestampMs" | "sessionId" | "inferenceId">): void {
    if (this.closed) return;
    const event: TextDeltaEvent = { ...body, timestampMs: Date.now(), ...this.ids };
    this.options.liveSink?.(event);
    this.answer.add(event);
    const queued = { after: this.events.length, event };
    for (const reader of this.deltaReaders) reader(queued);
    if (this.deltaReaders.size > 0) this.wake();
  }

  get all(): readonly HookboxEvent[] {
    return this.events;
  }

  /**
   * Events with seq >= fromSeq that this process saw, then live ones, ending after run-finished; with
   * `textDeltas`, also the text deltas that come while the reader iterates, each after the events before it
   * (the first one the answer so far, when the reader joins mid-answer).
   */
  iterate(fromSeq?: number): AsyncGenerator<HookboxEvent>;
  iterate(fromSeq: number | undefined, options: { textDeltas: boolean }): AsyncGenerator<LiveEvent>;
  async *iterate(fromSeq = 1, options: { textDeltas?: boolean } = {}): AsyncGenerator<LiveEvent> {
    let index = this.events.findIndex((e) => e.seq >= fromSeq);
    if (index < 0) index = this.events.length;
    const deltas: QueuedDelta[] = [];
    const reader = (queued: QueuedDelta) => deltas.push(queued);
    if (options.textDeltas) {
      const sofar = this.answer.catchUp();
      if (sofar) reader({ after: this.events.length, event: sofar });
      this.deltaReaders.add(reader);
    }
    try {
      for (;;) {
        if (deltas.length > 0 && deltas[0].after <= index) {
          yield deltas.shift()!.event;
          continue;
        }
        if (index < this.events.length) {
          // A reader of objects finds the event's text with eventJson (--json prints it).
          const event = withEventJson(this.events[index], this.texts[index]);
          index += 1;
          yield event;
          if (event.type === "run-finished") return;
          continue;
        }
        if (this.closed) return;
        await new Promise<void>((resolve) => this.waiters.add(resolve));
      }
    } finally {
      this.deltaReaders.delete(reader);
    }
  }

  private wake(): void {
    if (this.waiters.size === 0) return;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }
}
