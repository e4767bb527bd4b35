import {
  kvExpectationHolds,
  kvEntryBytes,
  kvQuotaError,
  kvIncrement,
  type KvListOptions,
  type KvPage,
  type KvSetOptions,
  type KvStore,
} from "../kv.js";
import { pgStoreError, type Pool, type PoolClient } from "./pg-driver.js";

/**
 * ctx.kv in the PostgreSQL store (tables `kv` and `kv_usage`): what the SQLite store does, each operation one
 * transaction. A tenant's byte count is one row, locked by the write that checks the quota against it, so
 * writes from every node add up exactly. Expired entries are dropped when read and, a bounded batch at a
 * time, on each write of their tenant.
 */
interface KvRow {
  value: string;
  bytes: number;
  expires_ms: number | null;
}

/** The row as `get` sees it: undefined when missing or expired. */
function live(row: KvRow | undefined, nowMs: number): { value: string; expiresMs?: number } | undefined {
  if (row === undefined || (row.expires_ms !== null && row.expires_ms <= nowMs)) return undefined;
  return { value: row.value, ...(row.expires_ms !== null ? { expiresMs: row.expires_ms } : {}) };
}

export class PgKv implements KvStore {
  constructor(
    private readonly pool: Pool,
    private readonly location: string,
  ) {}

  private async run<T>(what: string, action: (client: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw pgStoreError(this.location, what, error);
    }
    let failed: unknown;
    try {
      await client.query("BEGIN");
      const result = await action(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      failed = error;
      await client.query("ROLLBACK").catch(() => undefined);
      throw pgStoreError(this.location, what, error);
    } finally {
      client.release(failed !== undefined && (failed as { code?: unknown }).code === undefined ? true : undefined);
    }
  }

  /** Locks the tenant's byte count for this transaction and returns it. */
  private async lockUsage(client: PoolClient, tenant: string): Promise<number> {
    await client.query("INSERT INTO kv_usage (tenant, bytes) VALUES ($1, 0) ON CONFLICT (tenant) DO NOTHING", [tenant]);
    return (await client.query<{ bytes: number }>("SELECT bytes FROM kv_usage WHERE tenant = $1 FOR UPDATE", [tenant])).rows[0].bytes;
  }

  private async addUsage(client: PoolClient, tenant: string, bytes: number): Promise<void> {
    if (bytes !== 0) await client.query("UPDATE kv_usage SET bytes = bytes + $2 WHERE tenant = $1", [tenant, bytes]);
  }

  /** Drops expired entries of the tenant (at most `limit`); returns the bytes freed. */
  private async dropExpired(client: PoolClient, tenant: string, nowMs: number, limit: number | null, keep: string): Promise<number> {
    // `keep` is the key being written: its row (expired or not) is the write's `previous`, replaced, not dropped.
    const rows = await client.query<{ bytes: number }>(
      `DELETE FROM kv WHERE (tenant, key) IN
         (SELECT tenant, key FROM kv WHERE tenant = $1 AND expires_ms <= $2 AND key <> $4 LIMIT $3)
       RETURNING bytes`,
      [tenant, nowMs, limit, keep],
    );
    return rows.rows.reduce((sum, row) => sum + row.bytes, 0);
  }

  async get(tenant: string, key: string, nowMs: number): Promise<string | undefined> {
    return this.run("read a kv entry", async (client) => {
      const row = (
        await client.query<{ value: string; bytes: number; expires_ms: number | null }>(
          "SELECT value, bytes, expires_ms FROM kv WHERE tenant = $1 AND key = $2",
          [tenant, key],
        )
      ).rows[0];
      if (!row) return undefined;
      if (row.expires_ms !== null && row.expires_ms <= nowMs) {
        const removed = await client.query("DELETE FROM kv WHERE tenant = $1 AND key = $2 AND expires_ms <= $3", [tenant, key, nowMs]);
        if (removed.rowCount === 1) await this.addUsage(client, tenant, -row.bytes);
        return undefined;
      }
      return row.value;
    });
  }

  async set(tenant: string, key: string, valueJson: string, options: KvSetOptions): Promise<void> {
    await this.run("write a kv entry", async (client) => {
      const used = await this.lockUsage(client, tenant);
      await this.write(client, { tenant, key, valueJson, options, used, previous: await this.row(client, tenant, key) });
    });
  }

  /*
   * incr and compareAndSet read, decide and write in one transaction that first locks the tenant's byte-count row:
   * every write of the tenant's kv (from any node) takes that lock, so none lands between the read and the write.
   */
  async incr(tenant: string, key: string, by: number, options: KvSetOptions): Promise<number> {
    return this.run("increment a kv entry", async (client) => {
      const used = await this.lockUsage(client, tenant);
      const previous = await this.row(client, tenant, key);
      const next = kvIncrement(tenant, key, live(previous, options.nowMs), by, options);
      await this.write(client, { tenant, key, valueJson: next.valueJson, options: next.options, used, previous });
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
    return this.run("compare and set a kv entry", async (client) => {
      const used = await this.lockUsage(client, tenant);
      const previous = await this.row(client, tenant, key);
      const matches = kvExpectationHolds(live(previous, options.nowMs), expectedJson);
      if (matches) await this.write(client, { tenant, key, valueJson, options, used, previous });
      return matches;
    });
  }

  /** The key's row, live or expired, inside a transaction holding the tenant's lock. */
  private async row(client: PoolClient, tenant: string, key: string): Promise<KvRow | undefined> {
    return (await client.query<KvRow>("SELECT value, bytes, expires_ms FROM kv WHERE tenant = $1 AND key = $2", [tenant, key])).rows[0];
  }

  /**
   * The write of set, incr and compareAndSet, inside their transaction after lockUsage (`used`: the tenant's bytes
   * it read). `previous` is the key's row the write replaces, live or expired: its bytes count until replaced.
   */
  private async write(
    client: PoolClient,
    write: {
      tenant: string;
      key: string;
      valueJson: string;
      options: KvSetOptions;
      used: number;
      previous: KvRow | undefined;
    },
  ): Promise<void> {
    const { tenant, key, valueJson, options, previous } = write;
    let used = write.used;
    used -= await this.dropExpired(client, tenant, options.nowMs, 64, key);
    const bytes = kvEntryBytes(key, valueJson);
    // Expired entries count until dropped: drop them all before refusing a write.
    if (used - (previous?.bytes ?? 0) + bytes > options.quotaBytes)
      used -= await this.dropExpired(client, tenant, options.nowMs, null, key);
    const others = used - (previous?.bytes ?? 0);
    if (others + bytes > options.quotaBytes) throw kvQuotaError(tenant, others, bytes, options.quotaBytes);
    await client.query(
      `INSERT INTO kv (tenant, key, value, bytes, expires_ms) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value, bytes = excluded.bytes, expires_ms = excluded.expires_ms`,
      [tenant, key, valueJson, bytes, options.expiresMs ?? null],
    );
    // The row is locked: what the tenant uses now is what was there, less what was dropped, plus this entry.
    await client.query("UPDATE kv_usage SET bytes = $2 WHERE tenant = $1", [tenant, others + bytes]);
  }

  async delete(tenant: string, key: string, nowMs: number): Promise<boolean> {
    return this.run("delete a kv entry", async (client) => {
      const row = (
        await client.query<{ bytes: number; expires_ms: number | null }>(
          "DELETE FROM kv WHERE tenant = $1 AND key = $2 RETURNING bytes, expires_ms",
          [tenant, key],
        )
      ).rows[0];
      if (!row) return false;
      await this.addUsage(client, tenant, -row.bytes);
      return row.expires_ms === null || row.expires_ms > nowMs;
    });
  }

  async list(tenant: string, options: KvListOptions): Promise<KvPage> {
    let rows;
    try {
      rows = await this.pool.query<{ key: string }>(
        `SELECT key FROM kv WHERE tenant = $1 AND key >= $2 AND key > $3 AND (expires_ms IS NULL OR expires_ms > $4)
         ORDER BY key LIMIT $5`,
        [tenant, options.prefix, options.after ?? "", options.nowMs, options.limit + 1],
      );
    } catch (error) {
      throw pgStoreError(this.location, "list kv keys", error);
    }
    const keys: string[] = [];
    for (const row of rows.rows) {
      if (!row.key.startsWith(options.prefix)) return { keys };
      if (keys.length === options.limit) return { keys, cursor: keys[keys.length - 1] };
      keys.push(row.key);
    }
    return { keys };
  }

  async usedBytes(tenant: string): Promise<number> {
    try {
      return (await this.pool.query<{ bytes: number }>("SELECT bytes FROM kv_usage WHERE tenant = $1", [tenant])).rows[0]?.bytes ?? 0;
    } catch (error) {
      throw pgStoreError(this.location, "read kv usage", error);
    }
  }
}
