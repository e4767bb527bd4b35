import { ApiError } from "./api-error.js";

/*
 * Work a tenant may have in progress at once, per kind (event streams, replays, upload checks): each holds a
 * connection, a reader or a sandbox, so past its limit the next one is refused with 429 and the kind's code,
 * instead of queueing work without bound.
 */
export class TenantSlots {
  private readonly counts = new Map<string, number>();

  constructor(
    /** The 429's code, e.g. TOO_MANY_STREAMS. */
    private readonly code: string,
    /** What is counted, in the plural, e.g. "event streams open". */
    private readonly what: string,
    /** What the client should do, e.g. "close one first". */
    private readonly advice: string,
  ) {}

  /** Slots taken now, by tenant. */
  taken(): Map<string, number> {
    return new Map(this.counts);
  }

  /** Takes one slot of `tenant` (or throws 429); the returned release gives it back, once. */
  take(tenant: string, max: number): () => void {
    const count = this.counts.get(tenant) ?? 0;
    if (count >= max)
      throw new ApiError(429, this.code, `tenant ${tenant} already has ${count} ${this.what} (limit ${max}); ${this.advice}`, undefined, {
        "retry-after": "1",
      });
    this.counts.set(tenant, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(tenant) ?? 1) - 1;
      if (left > 0) this.counts.set(tenant, left);
      else this.counts.delete(tenant);
    };
  }
}
