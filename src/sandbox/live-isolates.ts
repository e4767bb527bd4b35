/** A tenant whose isolate may be evicted: it says whether it can go now (nothing of it runs) and goes. */
export interface Evictable {
  readonly tenant: string;
  /** Disposes the tenant's isolate (and leaves its worker) unless a callback of it is in flight; true if it did. */
  evictIfIdle(): boolean;
}

export interface EvictionOptions {
  /** An isolate unused for this long is disposed, ms (0: never by age). */
  idleMs: number;
  /** At most this many tenants keep a live isolate; beyond it the least recently used idle ones go. */
  maxLiveIsolates: number;
}

export const DEFAULT_EVICTION: EvictionOptions = { idleMs: 300_000, maxLiveIsolates: 2000 };

/**
 * The pool's tenants that hold a live isolate, least recently used first (a Map keeps insertion order, and a
 * use re-inserts). Memory then follows the active tenants: the cap evicts from the front when a tenant
 * becomes live, and one unref'd timer evicts what stayed unused for `idleMs`. A tenant with a callback in
 * flight is skipped (it stays live, over the cap if need be, until it is idle and the next eviction runs).
 */
export class LiveIsolates {
  private readonly lastUse = new Map<Evictable, number>();
  /** The tenant last inserted into `lastUse` (its last entry while it is there). */
  private newest: Evictable | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Isolates disposed by age or by the cap since the pool started. */
  evictions = 0;

  constructor(private readonly options: EvictionOptions) {}

  get size(): number {
    return this.lastUse.size;
  }

  /** The tenant used its isolate (it is live from now on); called for every message that runs its code. */
  touch(tenant: Evictable): void {
    // The newest entry only gets its time: re-inserting it (delete, then set) would leave the Map a deleted slot
    // per message, which it compacts by copying itself over and over on this hot path.
    if (this.newest !== tenant || !this.lastUse.has(tenant)) {
      this.lastUse.delete(tenant);
      this.newest = tenant;
    }
    this.lastUse.set(tenant, performance.now());
    if (this.lastUse.size > this.options.maxLiveIsolates) this.shrink(tenant);
    if (this.timer === undefined && this.options.idleMs > 0) this.arm(this.options.idleMs);
  }

  /** The tenant's isolate is gone (evicted, moved off its worker, or its worker died). */
  forget(tenant: Evictable): void {
    this.lastUse.delete(tenant);
  }

  /** Evicts the least recently used idle tenant that `among` accepts; true if one went. */
  evictLeastRecent(among: (tenant: Evictable) => boolean): boolean {
    for (const tenant of this.lastUse.keys()) {
      if (!among(tenant)) continue;
      const before = this.evictions;
      this.evict(tenant);
      if (this.evictions > before) return true;
    }
    return false;
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Evicts least recently used idle tenants until the cap holds; never `keep`, the tenant being served now. */
  private shrink(keep: Evictable): void {
    for (const tenant of this.lastUse.keys()) {
      if (this.lastUse.size <= this.options.maxLiveIsolates) return;
      if (tenant !== keep) this.evict(tenant);
    }
  }

  private evict(tenant: Evictable): void {
    // evictIfIdle() leaves the worker, which forgets the tenant here (deleting while iterating a Map is safe).
    if (tenant.evictIfIdle()) {
      this.lastUse.delete(tenant);
      this.evictions++;
    }
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.sweep(), Math.max(1, ms));
    this.timer.unref(); // eviction never keeps the host alive
  }

  /** Evicts every idle tenant unused for idleMs, then sleeps until the next one is due. */
  private sweep(): void {
    this.timer = undefined;
    const now = performance.now();
    for (const [tenant, usedAt] of this.lastUse) {
      const due = usedAt + this.options.idleMs;
      if (due > now) return this.arm(due - now);
      // A busy tenant stays; it is touched again when its callback ends.
      this.evict(tenant);
    }
    // Only busy tenants (or none) are left: look again after another idle period.
    if (this.lastUse.size > 0) this.arm(this.options.idleMs);
  }
}
