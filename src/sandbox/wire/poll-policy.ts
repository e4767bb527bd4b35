/** Most waits a side sleeps through after polls that kept missing (the backoff doubles up to it). */
const MAX_SKIPPED_WAITS = 256;

/**
 * Whether to poll for an expected message instead of sleeping (the host awaiting a worker's reply, a worker
 * awaiting the host's next call). Polling pays off when the message comes within the window: it saves the
 * wake-up of a sleeping CPU, which costs more than the work on a virtual machine. It costs when the message
 * comes later: a big payload, a pause between calls, or, worst, the other side waiting for the very CPU the
 * poller holds (host and worker on one CPU, which no poller is preempted in favour of: every wait then lasts
 * the whole window). So only a wait that polled is judged, and a poll that missed makes the next waits sleep
 * at once: 1, then 2, 4, ... up to 256 after consecutive misses, back to every wait after one that hit. Under
 * contention this costs one missed window per 256 messages; on a quiet machine every wait polls.
 */
export class PollPolicy {
  /** Waits to sleep through before polling again. */
  private skips = 0;
  /** How many waits the next miss makes us sleep through. */
  private backoff = 1;
  /** Whether the wait in progress polls (only those are judged). */
  private polling = false;

  constructor(private readonly windowMs: number) {}

  /** A wait starts: how long to poll for its message (0: sleep at once). */
  beginWait(): number {
    this.polling = false;
    if (this.windowMs <= 0) return 0;
    if (this.skips > 0) {
      this.skips--;
      return 0;
    }
    this.polling = true;
    return this.windowMs;
  }

  /** The awaited message came, `waitedMs` after the wait began. */
  endWait(waitedMs: number): void {
    if (!this.polling) return;
    this.polling = false;
    if (waitedMs <= this.windowMs) {
      this.backoff = 1;
      return;
    }
    this.skips = this.backoff;
    this.backoff = Math.min(this.backoff * 2, MAX_SKIPPED_WAITS);
  }
}
