/** A token bucket: `perMinute` tokens refilled continuously, at most `perMinute` saved up. */
export class TokenBucket {
  private tokens: number;
  private updatedMs = Date.now();

  constructor(private readonly perMinute: number) {
    this.tokens = perMinute;
  }

  /**
   * Takes `amount` tokens; returns 0 when allowed, else the ms until they are available. An amount larger
   * than the bucket is allowed once the bucket is full, and leaves it in debt.
   */
  take(amount = 1, now = Date.now()): number {
    this.tokens = Math.min(this.perMinute, this.tokens + ((now - this.updatedMs) * this.perMinute) / 60_000);
    this.updatedMs = now;
    const needed = Math.min(amount, this.perMinute);
    if (this.tokens >= needed) {
      this.tokens -= amount;
      return 0;
    }
    return Math.ceil(((needed - this.tokens) * 60_000) / this.perMinute);
  }
}
