import { TokenBucket } from "./rate-limit.js";

/*
 * Stored events an event stream replays (a reconnect with `Last-Event-ID: 0` to a big run reads it all again)
 * are charged to the stream's tenant (`eventReplayBytesPerMinute`, counted as JSON text, as the store quota counts). Past the budget the stream slows down:
 * it waits for the budget to refill before its next page, so reconnect loops cost the server a bounded rate
 * of work, and a client that reads a run once is never held back. Live events are not charged.
 */
export class EventReplayBudget {
  private readonly buckets = new Map<string, TokenBucket>();

  /** Charges `chars` to `tenant` (at most `perMinute`), resolving once its budget allows; never rejects. */
  async charge(tenant: string, perMinute: number, chars: number, signal: AbortSignal): Promise<void> {
    let bucket = this.buckets.get(tenant);
    if (bucket === undefined) this.buckets.set(tenant, (bucket = new TokenBucket(perMinute)));
    for (let waitMs = bucket.take(chars); waitMs > 0 && !signal.aborted; waitMs = bucket.take(chars)) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, waitMs);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
        signal.addEventListener("abort", done, { once: true });
      });
    }
  }
}
