import type { EventBody, HookboxEvent } from "../events/types.js";
import { eventJson } from "../events/event-json.js";

export interface EventLogOptions {
  /** Sees each event before any reader (persistence). */
  sink?: (event: HookboxEvent) => void;
  /** Decides whether an event is recorded at all (the run's byte budget); a refused one gets no seq and no reader sees it. */
  admit?: (event: HookboxEvent) => boolean;
  firstSeq?: number;
}

/**
 * The run's event stream: stamps seq (gap-free), time and ids, hands each event to the persistence
 * sink before any reader sees it, and serves replay-then-live async iteration.
 */
export class EventLog {
  private readonly events: HookboxEvent[] = [];
  private readonly waiters = new Set<() => void>();
  private closed = false;
  private nextSeq: number;

  constructor(
    private readonly ids: { sessionId: string; inferenceId: string },
    private readonly options: EventLogOptions = {},
  ) {
    this.nextSeq = options.firstSeq ?? 1;
  }

  emit(body: EventBody): HookboxEvent {
    if (this.closed) throw new Error(`event after run-finished: ${body.type}`);
    const event = { ...body, seq: this.nextSeq, timestampMs: Date.now(), ...this.ids } as HookboxEvent;
    if (this.options.admit && !this.options.admit(event)) return event;
    // Its JSON text is made once (by the budget's admission, or here): the store, stream readers and --json use it.
    eventJson(event);
    this.nextSeq += 1;
    this.options.sink?.(event);
    this.events.push(event);
    if (event.type === "run-finished") this.closed = true;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
    return event;
  }

  get all(): readonly HookboxEvent[] {
    return this.events;
  }

  /** Events with seq >= fromSeq that this process saw, then live ones, ending after run-finished. */
  async *iterate(fromSeq = 1): AsyncGenerator<HookboxEvent> {
    let index = this.events.findIndex((e) => e.seq >= fromSeq);
    if (index < 0) index = this.events.length;
    for (;;) {
      while (index < this.events.length) {
        const event = this.events[index++];
        yield event;
        if (event.type === "run-finished") return;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
  }
}
