import { inTransaction, prepare, type SqliteDatabase, type SqliteStatement } from "./sqlite-driver.js";
import { HookboxError } from "../errors.js";
import { storeError } from "./open-database.js";
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

/**
 * ctx.kv in the SQLite store (tables `kv` and `kv_usage`, src/store/migrations.ts). Each tenant's byte count is kept
 * in `kv_usage` and updated in the same transaction as the entry, so the quota check costs one row read,
 * not a sum over the tenant's keys. Expired entries are dropped when read and, a bounded batch at a time,
 * on each write of their tenant.
 */
export class SqliteKv implements KvStore {
  private readonly statements;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly location: string,
  ) {
    this.statements = {
      get: prepare(db, "SELECT value, bytes, expires_ms FROM kv WHERE tenant = ? AND key = ?"),
      upsert: prepare(
        db,
        "INSERT INTO kv (tenant, key, value, bytes, expires_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value, bytes = excluded.bytes, expires_ms = excluded.expires_ms",
      ),
      remove: prepare(db, "DELETE FROM kv WHERE tenant = ? AND key = ? RETURNING bytes, expires_ms"),
      expired: prepare(
        db,
        "DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv WHERE tenant = ? AND expires_ms <= ? LIMIT 64) RETURNING bytes",
      ),
      allExpired: prepare(db, "DELETE FROM kv WHERE tenant = ? AND expires_ms <= ? RETURNING bytes"),
      usage: prepare(db, "SELECT bytes FROM kv_usage WHERE tenant = ?"),
      addUsage: prepare(
        db,
        "INSERT INTO kv_usage (tenant, bytes) VALUES (?, ?) ON CONFLICT (tenant) DO UPDATE SET bytes = bytes + excluded.bytes",
      ),
      // `+?`: parameters hidden from the query planner (sqlite-statements.ts says why).
      page: prepare(
        db,
        "SELECT key FROM kv WHERE tenant = +? AND key >= +? AND key > +? AND (expires_ms IS NULL OR expires_ms > +?) ORDER BY key LIMIT +?",
      ),
    };
  }

  private run<T>(what: string, action: () => T): T {
    try {
      return inTransaction(this.db, action);
    } catch (error) {
      if (error instanceof HookboxError) throw error;
      throw storeError(this.location, `could not ${what}`, error);
    }
  }

  private used(tenant: string): number {
    return (this.statements.usage.get(tenant) as { bytes: number } | undefined)?.bytes ?? 0;
  }

  /** Deletes the entry if it expired; returns the live row. */
  private live(tenant: string, key: string, nowMs: number): { value: string; bytes: number; expiresMs?: number } | undefined {
    const row = this.statements.get.get(tenant, key) as { value: string; bytes: number; expires_ms: number | null } | undefined;
    if (row === undefined) return undefined;
    if (row.expires_ms !== null && row.expires_ms <= nowMs) {
      this.statements.remove.run(tenant, key);
      this.statements.addUsage.run(tenant, -row.bytes);
      return undefined;
    }
    return { value: row.value, bytes: row.bytes, ...(row.expires_ms !== null ? { expiresMs: row.expires_ms } : {}) };
  }

  private dropExpired(statement: SqliteStatement, tenant: string, nowMs: number): void {
    const freed = (statement.all(tenant, nowMs) as { bytes: number }[]).reduce((sum, row) => sum + row.bytes, 0);
    if (freed > 0) this.statements.addUsage.run(tenant, -freed);
  }

  async get(tenant: string, key: string, nowMs: number): Promise<string | undefined> {
    return this.run("read a kv entry", () => this.live(tenant, key, nowMs)?.value);
  }

  async set(tenant: string, key: string, valueJson: string, options: KvSetOptions): Promise<void> {
    this.run("write a kv entry", () => this.write(tenant, key, valueJson, options, this.live(tenant, key, options.nowMs)));
  }

  /*
   * incr and compareAndSet read, decide and write in one BEGIN IMMEDIATE transaction: it holds SQLite's write lock
   * from its first statement, so no other connection (another run, another process) writes in between.
   */
  async incr(tenant: string, key: string, by: number, options: KvSetOptions): Promise<number> {
    return this.run("increment a kv entry", () => {
      const previous = this.live(tenant, key, options.nowMs);
      const next = kvIncrement(tenant, key, previous, by, options);
      this.write(tenant, key, next.valueJson, next.options, previous);
      return JSON.parse(next.valueJson) as number;
    });
  }

  async compareAndSet(
    tenant: string,
    key: string,
    expectedJson: string | null,
    valueJson: string,
    options: KvSetOptions,
  ): Promise<boolean> {
    return this.run("compare and set a kv entry", () => {
      const previous = this.live(tenant, key, options.nowMs);
      const matches = kvExpectationHolds(previous, expectedJson);
      if (matches) this.write(tenant, key, valueJson, options, previous);
      return matches;
    });
  }

  /** The write of set, incr and compareAndSet, inside their transaction; `previous` is the live entry it replaces. */
  private write(tenant: string, key: string, valueJson: string, options: KvSetOptions, previous: { bytes: number } | undefined): void {
    this.dropExpired(this.statements.expired, tenant, options.nowMs);
    const bytes = kvEntryBytes(key, valueJson);
    // Expired entries count until dropped: drop them all before refusing a write.
    if (this.used(tenant) - (previous?.bytes ?? 0) + bytes > options.quotaBytes)
      this.dropExpired(this.statements.allExpired, tenant, options.nowMs);
    const used = this.used(tenant) - (previous?.bytes ?? 0);
    if (used + bytes > options.quotaBytes) throw kvQuotaError(tenant, used, bytes, options.quotaBytes);
    this.statements.upsert.run(tenant, key, valueJson, bytes, options.expiresMs ?? null);
    this.statements.addUsage.run(tenant, bytes - (previous?.bytes ?? 0));
  }

  async delete(tenant: string, key: string, nowMs: number): Promise<boolean> {
    return this.run("delete a kv entry", () => {
      const row = this.statements.remove.get(tenant, key) as { bytes: number; expires_ms: number | null } | undefined;
      if (row === undefined) return false;
      this.statements.addUsage.run(tenant, -row.bytes);
      return row.expires_ms === null || row.expires_ms > nowMs;
    });
  }

  async list(tenant: string, options: KvListOptions): Promise<KvPage> {
    const rows = this.statements.page.all(tenant, options.prefix, options.after ?? "", options.nowMs, options.limit + 1) as {
      key: string;
    }[];
    const keys: string[] = [];
    for (const row of rows) {
      if (!row.key.startsWith(options.prefix)) return { keys };
      if (keys.length === options.limit) return { keys, cursor: keys[keys.length - 1] };
      keys.push(row.key);
    }
    return { keys };
  }

  async usedBytes(tenant: string): Promise<number> {
    return this.used(tenant);
  }
}
