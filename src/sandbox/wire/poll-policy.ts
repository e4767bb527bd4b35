/**
 * Whether to poll for an expected message instead of sleeping (the host awaiting a worker's reply, a worker
 * awaiting the host's next call), from how often such waits ended within the window lately (an
 * exponentially weighted hit rate). Polling pays off only when the message usually comes within the window:
 * then it saves the wake-up. When it usually comes later (big payloads), polling only burns the CPU that the
 * other side's helper threads (V8's garbage collection and compilation) could use, and the process sleeps
 * at once. A rate, not a mean time: one stall of the VM or one pause between bursts is one miss.
 */
export class PollPolicy {
  private hitRate = 1;

  constructor(private readonly windowMs: number) {}

  /** A wait that just ended, from the message that started it to the one awaited. */
  record(waitedMs: number): void {
    this.hitRate += ((waitedMs <= this.windowMs ? 1 : 0) - this.hitRate) / 8;
  }

  /** How long to poll for the next message (0: sleep at once). */
  get pollMs(): number {
    return this.windowMs > 0 && this.hitRate >= 0.5 ? this.windowMs : 0;
  }
}
