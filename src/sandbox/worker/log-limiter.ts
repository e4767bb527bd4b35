/**
 * Token bucket per tenant: a script cannot flood the host with log events. Lines over the limit are counted,
 * and the count goes out with the next line that passes (`drainDropped`), so readers learn what they missed.
 */
export class LogLimiter {
  private tokens: number;
  private last = performance.now();
  private dropped = 0;

  constructor(readonly perSecond: number) {
    this.tokens = perSecond;
  }

  take(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    this.dropped += 1;
    return false;
  }

  /** Counts a line dropped for another reason (no room in the reply), reported with the others. */
  countDropped(): void {
    this.dropped += 1;
  }

  /** Lines dropped since the last call (and resets the count). */
  drainDropped(): number {
    const dropped = this.dropped;
    this.dropped = 0;
    return dropped;
  }
}
