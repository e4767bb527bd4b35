import { HookboxError } from "../../errors.js";
import { MAX_BATCH_BYTES, type Applied } from "../group-commit.js";
import { overQuota, quotaError } from "../quota.js";
import type { UsageDelta } from "../usage.js";
import { isDeadlock, pgStoreError, retryDeadlocks, type Pool, type PoolClient, type Queryable } from "./pg-driver.js";

/*
 * Group commit on PostgreSQL: the writes that arrive while a transaction is in flight (or within one turn of
 * the event loop) are the next transaction, applied in arrival order, each kept or refused on its own (a
 * savepoint each when there are several). A write's promise settles once its transaction is committed.
 *
 * A tenant's stored bytes (the store quota) and all-time usage totals are one row each that every node
 * updates: they are written once per transaction, at its end, in tenant order (so two nodes never wait on
 * each other's rows in opposite orders), and held only from then to the commit. When the end finds a tenant
 * over a quota one of its writes carried, the transaction is rolled back and done again "carefully": those
 * tenants' rows are locked first and every write checked on its own, as the SQLite store does.
 */

export interface PgWrite {
  what: string;
  /** The tenant the write charges, when known up front (a careful transaction locks it first). */
  tenant?: string;
  apply(tx: PgTransaction): Promise<unknown>;
}

interface Charge {
  bytes: number;
  max?: number;
}

/** Rolled back to be done again carefully (never escapes this module). */
class RetryCarefully extends Error {}

/** One transaction's connection and what its writes add up to. */
export class PgTransaction implements Queryable {
  private readonly charges = new Map<string, Charge[]>();
  private readonly usage = new Map<string, UsageDelta>();
  private readonly notifications = new Set<string>();
  /** Careful mode: each tenant's stored bytes as locked at the start, plus what kept writes added. */
  private readonly locked = new Map<string, number>();
  private pending: { charges: [string, Charge][]; usage: [string, UsageDelta][]; notifications: string[] } = {
    charges: [],
    usage: [],
    notifications: [],
  };

  constructor(
    private readonly client: PoolClient,
    readonly careful: boolean,
  ) {}

  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]) {
    return this.client.query(sql, params) as unknown as Promise<{ rows: Row[]; rowCount: number | null }>;
  }

  /** Adds `bytes` to the tenant's stored total; refused with STORE_QUOTA (careful mode) when over `max`. */
  async charge(tenant: string, bytes: number, max?: number): Promise<void> {
    if (this.careful && max !== undefined) {
      const stored = await this.storedBytes(tenant);
      const added = this.pending.charges.filter(([name]) => name === tenant).reduce((sum, [, charge]) => sum + charge.bytes, 0);
      if (overQuota(stored + added, bytes, max)) throw quotaError(tenant, stored + added, bytes, max);
    }
    this.pending.charges.push([tenant, { bytes, ...(max !== undefined ? { max } : {}) }]);
  }

  addUsage(tenant: string, delta: UsageDelta): void {
    this.pending.usage.push([tenant, delta]);
  }

  /** Wakes every node's readers of `runId` once this transaction commits. */
  notifyRun(runId: string): void {
    this.pending.notifications.push(runId);
  }

  /** The write in progress was kept: what it charged and noted counts. */
  keep(): void {
    for (const [tenant, charge] of this.pending.charges) {
      const list = this.charges.get(tenant) ?? [];
      list.push(charge);
      this.charges.set(tenant, list);
      if (this.locked.has(tenant)) this.locked.set(tenant, this.locked.get(tenant)! + charge.bytes);
    }
    for (const [tenant, delta] of this.pending.usage) {
      const sum = this.usage.get(tenant);
      if (!sum) this.usage.set(tenant, { ...delta });
      else for (const key of Object.keys(sum) as (keyof UsageDelta)[]) sum[key] += delta[key];
    }
    for (const runId of this.pending.notifications) this.notifications.add(runId);
    this.drop();
  }

  /** The write in progress was refused: nothing of it counts. */
  drop(): void {
    this.pending = { charges: [], usage: [], notifications: [] };
  }

  /** Careful mode: locks the tenants' stored-byte rows, in order, before any write. */
  async lockTenants(tenants: string[]): Promise<void> {
    const sorted = [...new Set(tenants)].sort();
    if (sorted.length === 0) return;
    await this.query("INSERT INTO tenant_usage (tenant, bytes) SELECT unnest($1::text[]), 0 ON CONFLICT (tenant) DO NOTHING", [sorted]);
    const rows = await this.query<{ tenant: string; bytes: number }>(
      "SELECT tenant, bytes FROM tenant_usage WHERE tenant = ANY($1::text[]) ORDER BY tenant FOR UPDATE",
      [sorted],
    );
    for (const row of rows.rows) this.locked.set(row.tenant, row.bytes);
  }

  private async storedBytes(tenant: string): Promise<number> {
    if (!this.locked.has(tenant)) await this.lockTenants([tenant]);
    return this.locked.get(tenant)!;
  }

  /** Writes the totals, tenant by tenant in order; in the fast mode, asks for a careful retry when a quota was passed. */
  async finish(): Promise<void> {
    const tenants = [...this.charges.keys()].sort();
    for (const tenant of tenants) {
      const charges = this.charges.get(tenant)!;
      const bytes = charges.reduce((sum, charge) => sum + charge.bytes, 0);
      const total = (
        await this.query<{ bytes: number }>(
          `INSERT INTO tenant_usage AS u (tenant, bytes) VALUES ($1, $2)
           ON CONFLICT (tenant) DO UPDATE SET bytes = u.bytes + excluded.bytes RETURNING bytes`,
          [tenant, bytes],
        )
      ).rows[0].bytes;
      const limits = charges.flatMap((charge) => (charge.max === undefined ? [] : [charge.max]));
      if (!this.careful && limits.length > 0 && total > Math.min(...limits)) throw new RetryCarefully();
    }
    for (const tenant of [...this.usage.keys()].sort()) {
      const u = this.usage.get(tenant)!;
      await this.query(
        `INSERT INTO usage_totals AS t (tenant, runs, inferences, input_tokens, output_tokens, cost_usd, tool_calls, sandbox_cpu_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (tenant) DO UPDATE SET runs = t.runs + excluded.runs, inferences = t.inferences + excluded.inferences,
           input_tokens = t.input_tokens + excluded.input_tokens, output_tokens = t.output_tokens + excluded.output_tokens,
           cost_usd = t.cost_usd + excluded.cost_usd, tool_calls = t.tool_calls + excluded.tool_calls,
           sandbox_cpu_ms = t.sandbox_cpu_ms + excluded.sandbox_cpu_ms`,
        [tenant, u.runs, u.inferences, u.inputTokens, u.outputTokens, u.costUsd, u.toolCalls, u.sandboxCpuMs],
      );
    }
    if (this.notifications.size > 0)
      await this.query("SELECT pg_notify('hookbox_events', run_id) FROM unnest($1::text[]) AS run_id", [[...this.notifications]]);
  }
}

interface Queued {
  write: PgWrite;
  bytes: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class PgGroupCommit {
  private queue: Queued[] = [];
  private busy = false;
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    private readonly location: string,
  ) {}

  submit<T>(write: PgWrite, bytes = 0): Promise<T> {
    const promise = new Promise<unknown>((resolve, reject) => {
      this.queue.push({ write, bytes, resolve, reject });
      this.schedule();
    });
    this.last = promise.catch(() => undefined);
    return promise as Promise<T>;
  }

  /** Resolves once every write submitted so far is committed or refused (a read waits for it). */
  settled(): Promise<unknown> {
    return this.last;
  }

  private schedule(): void {
    if (this.busy) return;
    this.busy = true;
    setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        let count = 0;
        let bytes = 0;
        while (count < this.queue.length && (count === 0 || bytes + this.queue[count].bytes <= MAX_BATCH_BYTES))
          bytes += this.queue[count++].bytes;
        const batch = this.queue.splice(0, count);
        let results: Applied<unknown>[];
        try {
          results = await this.commit(batch.map((queued) => queued.write));
        } catch (error) {
          const failure = pgStoreError(this.location, batch.length === 1 ? batch[0].write.what : `commit ${batch.length} writes`, error);
          for (const queued of batch) queued.reject(failure);
          continue;
        }
        batch.forEach((queued, index) => {
          const result = results[index];
          if (result.ok) queued.resolve(result.value);
          else queued.reject(result.error);
        });
      }
    } finally {
      this.busy = false;
      if (this.queue.length > 0) this.schedule();
    }
  }

  private async commit(writes: PgWrite[]): Promise<Applied<unknown>[]> {
    try {
      return await retryDeadlocks(() => this.transaction(writes, false));
    } catch (error) {
      if (!(error instanceof RetryCarefully)) throw error;
      return retryDeadlocks(() => this.transaction(writes, true));
    }
  }

  private async transaction(writes: PgWrite[], careful: boolean): Promise<Applied<unknown>[]> {
    const client = await this.pool.connect();
    let broken: unknown;
    try {
      await client.query("BEGIN");
      const tx = new PgTransaction(client, careful);
      if (careful) await tx.lockTenants(writes.flatMap((write) => (write.tenant ? [write.tenant] : [])));
      const alone = writes.length === 1;
      const results: Applied<unknown>[] = [];
      for (const write of writes) {
        if (!alone) await client.query("SAVEPOINT hookbox_write");
        try {
          const value = await write.apply(tx);
          if (!alone) await client.query("RELEASE hookbox_write");
          tx.keep();
          results.push({ ok: true, value });
        } catch (error) {
          tx.drop();
          if (alone || !(error instanceof HookboxError || isStatementError(error))) throw error;
          await client.query("ROLLBACK TO hookbox_write");
          await client.query("RELEASE hookbox_write");
          results.push({ ok: false, error: pgStoreError(this.location, write.what, error) });
        }
      }
      await tx.finish();
      await client.query("COMMIT");
      return results;
    } catch (error) {
      broken = error;
      await client.query("ROLLBACK").catch(() => undefined);
      // A write alone in its transaction that was refused (over the quota, a seq that does not follow) is that
      // write's result; a transaction that failed otherwise fails every write of it.
      if (writes.length === 1 && (error instanceof HookboxError || isStatementError(error)) && !(error instanceof RetryCarefully))
        return [{ ok: false, error: pgStoreError(this.location, writes[0].what, error) }];
      throw error;
    } finally {
      // A connection that failed mid-transaction is not given back to the pool (a deadlock's victim is intact).
      const intact = broken === undefined || broken instanceof HookboxError || isStatementError(broken) || isDeadlock(broken);
      client.release(intact ? undefined : true);
    }
  }
}

/** An error the database raised for one statement (it has a SQLSTATE outside the connection classes). */
function isStatementError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !/^(08|57P0)/.test(code) && code !== "53300" && code !== "40P01";
}
