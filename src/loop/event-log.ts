import type { EventBody, HookboxEvent } from "../events/types.js";

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
    private readonly sink?: (event: HookboxEvent) => void,
    firstSeq = 1,
  ) {
    this.nextSeq = firstSeq;
  }

  emit(body: EventBody): HookboxEvent {
    if (this.closed) throw new Error(`event after run-finished: ${body.type}`);
    const event = { ...body, seq: this.nextSeq, timestampMs: Date.now(), ...this.ids } as HookboxEvent;
    this.nextSeq += 1;
    this.sink?.(event);
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
