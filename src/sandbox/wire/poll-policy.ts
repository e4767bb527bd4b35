/**
 * Most waits a side sleeps through after polls that kept missing (the backoff doubles up to it): the worker's
 * default. The host passes a smaller one (reply-wait.ts REPLY_MAX_SKIPPED_WAITS).
 */
const MAX_SKIPPED_WAITS = 256;

/**
 * Whether to poll for an expected message instead of sleeping (the host awaiting a worker's reply, a worker
 * awaiting the host's next call). Polling pays off when the message comes within the window: it saves the
 * wake-up of a sleeping CPU, which costs more than the work on a virtual machine. It costs when the message
 * comes later: a big payload, a pause between calls, or, worst, the other side waiting for the very CPU the
 * poller holds (host and worker on one CPU, which no poller is preempted in favour of: every wait then lasts
 * the whole window). So only a wait that polled is judged, and a poll that missed makes the next waits sleep
 * at once: 1, then 2, 4, ... up to `maxSkippedWaits` after consecutive misses, back to every wait after one
 * that hit. Under contention this costs one missed window per `maxSkippedWaits + 1` messages; on a quiet
 * machine every wait polls. The bound is also how long a side goes on sleeping once the contention is over:
 * the sleeping waits are not judged, so only the next poll finds out.
 *
 * A miss is a window that ended with the message not there when the poller looked (`lapsed`), not a message
 * handled late: a poller busy with other work past its window (the host running a loop step) finds the
 * message already there and never slept for it, so that wait is a hit (`caught`). Judging by the time from
 * the wait's start to the message's handling counted each such wait a miss, and on a busy host that flipped
 * both sides into sleeping, where every message costs a wake-up (BENCHMARKS.md, "The loop bench's slow rounds").
 */
export class PollPolicy {
  /** Waits to sleep through before polling again. */
  private skips = 0;
  /** How many waits the next miss makes us sleep through. */
  private backoff = 1;
  /** Whether the wait in progress polls and is not judged yet (only those are judged). */
  private polling = false;

  constructor(
    private readonly windowMs: number,
    private readonly maxSkippedWaits = MAX_SKIPPED_WAITS,
  ) {}

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

  /** The awaited message came while the poll was still on: polling pays, every wait polls. */
  caught(): void {
    if (!this.polling) return;
    this.polling = false;
    this.backoff = 1;
  }

  /** The poll's window ended and the awaited message was not there: sleep through the next waits. */
  lapsed(): void {
    if (!this.polling) return;
    this.polling = false;
    this.skips = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.maxSkippedWaits);
  }
}
