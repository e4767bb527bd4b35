import {
  kvExpectationHolds,
  kvEntryBytes,
  kvQuotaError,
  kvIncrement,
  type KvListOptions,
  type KvPage,
  type KvSetOptions,
  type KvStore,
} from "./kv.js";

interface Entry {
  value: string;
  expiresMs?: number;
  bytes: number;
}

interface TenantKv {
  entries: Map<string, Entry>;
  /** Keys kept sorted, so a page costs a binary search and a slice, not a sort of every key. */
  sorted: string[];
  bytes: number;
}

/** ctx.kv kept in this process (the memory store, and a CLI run without --store). */
export class MemoryKv implements KvStore {
  private readonly tenants = new Map<string, TenantKv>();

  private tenant(name: string): TenantKv {
    let kv = this.tenants.get(name);
    if (kv === undefined) this.tenants.set(name, (kv = { entries: new Map(), sorted: [], bytes: 0 }));
    return kv;
  }

  /** The live entry, dropping it if it expired. */
  private live(kv: TenantKv, key: string, nowMs: number): Entry | undefined {
    const entry = kv.entries.get(key);
    if (entry !== undefined && entry.expiresMs !== undefined && entry.expiresMs <= nowMs) {
      this.remove(kv, key, entry);
      return undefined;
    }
    return entry;
  }

  private dropExpired(kv: TenantKv, nowMs: number): void {
    for (const [key, entry] of kv.entries) if (entry.expiresMs !== undefined && entry.expiresMs <= nowMs) this.remove(kv, key, entry);
  }

  private remove(kv: TenantKv, key: string, entry: Entry): void {
    kv.entries.delete(key);
    kv.bytes -= entry.bytes;
    kv.sorted.splice(lowerBound(kv.sorted, key), 1);
  }

  async get(tenant: string, key: string, nowMs: number): Promise<string | undefined> {
    return this.live(this.tenant(tenant), key, nowMs)?.value;
  }

  async set(tenant: string, key: string, valueJson: string, options: KvSetOptions): Promise<void> {
    const kv = this.tenant(tenant);
    this.write(kv, tenant, key, valueJson, options, this.live(kv, key, options.nowMs));
  }

  // incr and compareAndSet read, decide and write with no await in between: nothing else runs in this process meanwhile.
  async incr(tenant: string, key: string, by: number, options: KvSetOptions): Promise<number> {
    const kv = this.tenant(tenant);
    const previous = this.live(kv, key, options.nowMs);
    const next = kvIncrement(tenant, key, previous, by, options);
    this.write(kv, tenant, key, next.valueJson, next.options, previous);
    return JSON.parse(next.valueJson) as number;
  }

  async compareAndSet(
    tenant: string,
    key: string,
    expectedJson: string | null,
    valueJson: string,
    options: KvSetOptions,
  ): Promise<boolean> {
    const kv = this.tenant(tenant);
    const previous = this.live(kv, key, options.nowMs);
    const matches = kvExpectationHolds(previous, expectedJson);
    if (matches) this.write(kv, tenant, key, valueJson, options, previous);
    return matches;
  }

  private write(kv: TenantKv, tenant: string, key: string, valueJson: string, options: KvSetOptions, previous: Entry | undefined): void {
    const bytes = kvEntryBytes(key, valueJson);
    // Expired entries count until they are dropped: drop them all before refusing a write.
    if (kv.bytes - (previous?.bytes ?? 0) + bytes > options.quotaBytes) this.dropExpired(kv, options.nowMs);
    const used = kv.bytes - (previous?.bytes ?? 0);
    if (used + bytes > options.quotaBytes) throw kvQuotaError(tenant, used, bytes, options.quotaBytes);
    if (previous === undefined) kv.sorted.splice(lowerBound(kv.sorted, key), 0, key);
    kv.entries.set(key, { value: valueJson, bytes, ...(options.expiresMs !== undefined ? { expiresMs: options.expiresMs } : {}) });
    kv.bytes = used + bytes;
  }

  async delete(tenant: string, key: string, nowMs: number): Promise<boolean> {
    const kv = this.tenant(tenant);
    const entry = this.live(kv, key, nowMs);
    if (entry === undefined) return false;
    this.remove(kv, key, entry);
    return true;
  }

  async list(tenant: string, options: KvListOptions): Promise<KvPage> {
    const kv = this.tenant(tenant);
    const start = options.after !== undefined && options.after >= options.prefix ? options.after : options.prefix;
    let index = lowerBound(kv.sorted, start);
    if (kv.sorted[index] === options.after) index++;
    const keys: string[] = [];
    while (index < kv.sorted.length && keys.length < options.limit) {
      const key = kv.sorted[index++];
      if (!key.startsWith(options.prefix)) return { keys };
      const entry = kv.entries.get(key)!;
      if (entry.expiresMs === undefined || entry.expiresMs > options.nowMs) keys.push(key);
    }
    return index < kv.sorted.length && keys.length > 0 ? { keys, cursor: keys[keys.length - 1] } : { keys };
  }

  async usedBytes(tenant: string): Promise<number> {
    return this.tenants.get(tenant)?.bytes ?? 0;
  }
}

/** First index whose key is >= `key`. */
function lowerBound(sorted: string[], key: string): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle] < key) low = middle + 1;
    else high = middle;
  }
  return low;
}
