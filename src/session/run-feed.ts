import type { HookboxEvent } from "../events/types.js";

type Listener = (event: HookboxEvent) => void;

/** Live fan-out of one run's committed events to readers in this process (SSE streams, CLI printers). */
export class RunFeed {
  private readonly listeners = new Set<Listener>();

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A listener that throws is a reader's bug: it is logged and never stops the run or the other readers. */
  publish(event: HookboxEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        process.stderr.write(`hookbox: an event reader failed on event ${event.seq}: ${(error as Error)?.message ?? String(error)}\n`);
      }
    }
  }
}

/** True when no more events of this run will follow (an interrupted run may be resumed, so only when it is not live). */
export function isTerminal(event: { type: string; status?: string }, live: boolean): boolean {
  return event.type === "run-finished" && (event.status !== "interrupted" || !live);
}
