/** A token bucket: `perMinute` tokens refilled continuously, at most `perMinute` saved up. */
export class TokenBucket {
  private tokens: number;
  private updatedMs = Date.now();

  constructor(private readonly perMinute: number) {
    this.tokens = perMinute;
  }

  /** Takes a token; returns 0 when allowed, else the ms until one is available. */
  take(now = Date.now()): number {
    this.tokens = Math.min(this.perMinute, this.tokens + ((now - this.updatedMs) * this.perMinute) / 60_000);
    this.updatedMs = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) * 60_000) / this.perMinute);
  }
}
