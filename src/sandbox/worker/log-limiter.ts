/** Token bucket per tenant: a script cannot flood the host with log events. Drops are reported once per refill. */
export class LogLimiter {
  private tokens: number;
  private last = performance.now();
  dropped = 0;

  constructor(private readonly perSecond: number) {
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
}
