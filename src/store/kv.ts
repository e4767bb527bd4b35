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
  /**
   * Adds `by` to the entry's number and returns the sum, atomically (one transaction; in PostgreSQL one that
   * holds the tenant's kv lock, the row every kv write of the tenant locks): a missing or expired entry counts as 0 and is created with
   * `expiresMs`; an existing one keeps its expiry (a rate limit's window). An entry whose value is not a number
   * is CAPABILITY_INVALID and stays as it was.
   */
  incr(tenant: string, key: string, by: number, options: KvSetOptions): Promise<number>;
  /**
   * Writes `valueJson` only if the entry's value equals `expectedJson` as JSON (object key order aside; `null`:
   * the entry is missing, expired or null, as `get` reads it), atomically (as incr); true when it wrote.
   */
  compareAndSet(tenant: string, key: string, expectedJson: string | null, valueJson: string, options: KvSetOptions): Promise<boolean>;
  /** Bytes the tenant's entries count against its quota (expired ones until they are dropped). */
  usedBytes(tenant: string): Promise<number>;
}

/** The number an incr adds to, or CAPABILITY_INVALID when the entry holds something else. */
export function kvCounter(tenant: string, key: string, valueJson: string | undefined): number {
  if (valueJson === undefined) return 0;
  const value = JSON.parse(valueJson) as unknown;
  if (typeof value !== "number")
    throw new HookboxError("CAPABILITY_INVALID", `ctx.kv.incr: the value of "${key}" is not a number`, { tenant, key });
  return value;
}

/** The JSON text of an incr's sum, or CAPABILITY_INVALID when it is not a finite number. */
export function kvSum(key: string, current: number, by: number): string {
  const sum = current + by;
  if (!Number.isFinite(sum))
    throw new HookboxError("CAPABILITY_INVALID", `ctx.kv.incr: the sum for "${key}" is not a finite number`, { key });
  return JSON.stringify(sum);
}

/** A live entry as incr and compareAndSet read it, whichever store holds it. */
export interface KvLiveEntry {
  value: string;
  expiresMs?: number;
}

/**
 * What incr writes over `current`: the sum as JSON text, with the live entry's expiry kept (a new counter takes
 * the options' expiry). CAPABILITY_INVALID when the live value or the sum is not a number.
 */
export function kvIncrement(
  tenant: string,
  key: string,
  current: KvLiveEntry | undefined,
  by: number,
  options: KvSetOptions,
): { valueJson: string; options: KvSetOptions } {
  const valueJson = kvSum(key, kvCounter(tenant, key, current?.value), by);
  return { valueJson, options: { ...options, expiresMs: current ? current.expiresMs : options.expiresMs } };
}

/** compareAndSet's test: get answers null for a missing key, so an expected null matches a missing key and a stored null alike. */
export function kvExpectationHolds(current: KvLiveEntry | undefined, expectedJson: string | null): boolean {
  return current === undefined ? expectedJson === null : sameJson(current.value, expectedJson ?? "null");
}

/** Two JSON texts hold the same value, object key order aside (PostgreSQL's jsonb equality). */
export function sameJson(a: string, b: string): boolean {
  return a === b || canonicalJson(JSON.parse(a)) === canonicalJson(JSON.parse(b));
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value);
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
