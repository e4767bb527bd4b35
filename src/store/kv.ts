import { HookboxError } from "../errors.js";

/*
 * The per-tenant key-value store behind `ctx.kv` (src/capabilities/kv.ts). Values are JSON text; every
 * method is async so a networked store (PostgreSQL) can implement it. Limits are checked by the caller,
 * except the quota, which the store checks together with the write (one transaction).
 */

/** What one entry costs against the tenant's quota beyond its key and value bytes (bookkeeping). */
export const KV_ENTRY_OVERHEAD_BYTES = 64;

export interface KvSetOptions {
  /** Epoch ms after which the entry is gone; none: it stays. */
  expiresMs?: number;
  /** The tenant's quota: the write is refused with CAPABILITY_QUOTA if the tenant would go past it. */
  quotaBytes: number;
  nowMs: number;
}

export interface KvListOptions {
  prefix: string;
  /** Keys after this one (the previous page's `cursor`). */
  after?: string;
  limit: number;
  nowMs: number;
}

export interface KvPage {
  keys: string[];
  /** Present when there may be more keys: pass it as `after` for the next page. */
  cursor?: string;
}

export interface KvStore {
  /** The entry's JSON text, or undefined when missing or expired. */
  get(tenant: string, key: string, nowMs: number): Promise<string | undefined>;
  set(tenant: string, key: string, valueJson: string, options: KvSetOptions): Promise<void>;
  /** True when there was a live entry. */
  delete(tenant: string, key: string, nowMs: number): Promise<boolean>;
  /** Keys in code-unit order, live entries only. */
  list(tenant: string, options: KvListOptions): Promise<KvPage>;
  /** Bytes the tenant's entries count against its quota (expired ones until they are dropped). */
  usedBytes(tenant: string): Promise<number>;
}

export function kvEntryBytes(key: string, valueJson: string): number {
  return Buffer.byteLength(key) + Buffer.byteLength(valueJson) + KV_ENTRY_OVERHEAD_BYTES;
}

export function kvQuotaError(tenant: string, used: number, adding: number, quotaBytes: number): HookboxError {
  return new HookboxError(
    "CAPABILITY_QUOTA",
    `ctx.kv.set: tenant ${tenant} would use ${used + adding} bytes of its ${quotaBytes}-byte kv quota (delete keys or raise kv.quotaBytes)`,
    { tenant, quotaBytes },
  );
}
