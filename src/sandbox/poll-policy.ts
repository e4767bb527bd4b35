/**
 * Whether to poll for an expected message instead of sleeping (the host awaiting a worker's reply, a worker
 * awaiting the host's next call), from how long such waits took lately (an exponentially weighted mean).
 * Polling pays off only when the message usually comes within the window: then it saves the wake-up. When
 * it usually comes later, polling only burns the CPU that the other side's helper threads (V8's garbage
 * collection and compilation) could use, and the process sleeps at once.
 */
export class PollPolicy {
  private meanMs = 0;

  constructor(private readonly windowMs: number) {}

  /**
   * A wait that just ended, from the message that started it to the one awaited. A long one counts as 4
   * windows: one pause between bursts of calls must not turn polling off for the burst that follows.
   */
  record(waitedMs: number): void {
    this.meanMs += (Math.min(waitedMs, 4 * this.windowMs) - this.meanMs) / 8;
  }

  /** How long to poll for the next message (0: sleep at once). */
  get pollMs(): number {
    return this.windowMs > 0 && this.meanMs <= this.windowMs ? this.windowMs : 0;
  }
}
