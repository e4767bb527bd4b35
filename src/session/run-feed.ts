import type { HookboxEvent, TextDeltaEvent } from "../events/types.js";

type Listener = (event: HookboxEvent) => void;
/** `afterSeq`: the last event published before the delta (the delta belongs right after it). */
type DeltaListener = (event: TextDeltaEvent, afterSeq: number) => void;

/** Live fan-out of one run's committed events, and of its text deltas, to readers in this process (SSE streams, CLI printers). */
export class RunFeed {
  private readonly listeners = new Set<Listener>();
  private readonly deltaListeners = new Set<DeltaListener>();

  /** `lastSeq`: the run's committed seq when the feed starts (a resumed run's). */
  constructor(private lastSeq = 0) {}

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  subscribeDeltas(listener: DeltaListener): () => void {
    this.deltaListeners.add(listener);
    return () => this.deltaListeners.delete(listener);
  }

  /** A listener that throws is a reader's bug: it is logged and never stops the run or the other readers. */
  publish(event: HookboxEvent): void {
    this.lastSeq = Math.max(this.lastSeq, event.seq);
    for (const listener of this.listeners) guard(event.seq, () => listener(event));
  }

  publishDelta(event: TextDeltaEvent): void {
    for (const listener of this.deltaListeners) guard(this.lastSeq, () => listener(event, this.lastSeq));
  }
}

function guard(seq: number, call: () => void): void {
  try {
    call();
  } catch (error) {
    process.stderr.write(`hookbox: an event reader failed on event ${seq}: ${(error as Error)?.message ?? String(error)}\n`);
  }
}

/** True when no more events of this run will follow (an interrupted run may be resumed, so only when it is not live). */
export function isTerminal(event: { type: string; status?: string }, live: boolean): boolean {
  return event.type === "run-finished" && (event.status !== "interrupted" || !live);
}
