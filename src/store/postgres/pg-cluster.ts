import type { ClusterStore, ControlReply, HeldRun, RunControl } from "../cluster.js";
import type { RunRow } from "../rows.js";
import type { RunRecord } from "../types.js";
import { pgStoreError, retryDeadlocks, type Pool } from "./pg-driver.js";
import { PgTransaction } from "./pg-commit.js";
import type { PgListener } from "./pg-listener.js";
import { NOW_MS } from "./pg-sql.js";
import { reopenLocked, snapshotIterations } from "./pg-takeover.js";

/** How often a node looks for controls sent to it and for replies it waits for, beside the notifications. */
const CONTROL_POLL_MS = 500;

/**
 * The ClusterStore half of the PostgreSQL store (src/store/cluster.ts): leases, takeover, controls, wake-ups,
 * shared rate buckets and this node's view of the database's health.
 */
export class PgCluster implements ClusterStore {
  private healthy: { ok: true } | { ok: false; reason: string } = { ok: true };
  private readonly watchers = new Map<string, Set<() => void>>();
  private readonly replyWaiters = new Map<number, () => void>();
  private readonly stops: (() => void)[] = [];

  constructor(
    private readonly pool: Pool,
    private readonly listener: PgListener,
    private readonly location: string,
    readonly node: string,
    readonly leaseMs: number,
  ) {
    this.stops.push(
      listener.on("hookbox_events", (runId) => this.wake(runId)),
      listener.on("hookbox_replies", (id) => this.replyWaiters.get(Number(id))?.()),
      // Back after a lost connection: whatever was notified meanwhile is read now.
      listener.onReconnect(() => {
        for (const runId of this.watchers.keys()) this.wake(runId);
        for (const waiter of this.replyWaiters.values()) waiter();
      }),
    );
  }

  health() {
    return this.healthy;
  }

  /** Runs `action` against the database, noting whether it answered (what `health()` reports). */
  private async reach<T>(what: string, action: () => Promise<T>): Promise<T> {
    try {
      const result = await action();
      this.healthy = { ok: true };
      return result;
    } catch (error) {
      const failure = pgStoreError(this.location, what, error);
      if (failure.code === "STORE_UNAVAILABLE") this.healthy = { ok: false, reason: failure.message };
      throw failure;
    }
  }

  async renewLeases(runs: HeldRun[]): Promise<string[]> {
    return this.reach("renew run leases", async () => {
      if (runs.length === 0) {
        await this.pool.query("SELECT 1");
        return [];
      }
      const renewed = await retryDeadlocks(() =>
        this.pool.query<{ id: string }>(
          `UPDATE runs r SET lease_expires_ms = ${NOW_MS} + $3 FROM unnest($1::text[], $2::int[]) AS h(id, epoch)
           WHERE r.id = h.id AND r.epoch = h.epoch AND r.status = 'running' RETURNING r.id`,
          [runs.map((run) => run.runId), runs.map((run) => run.epoch), this.leaseMs],
        ),
      );
      const kept = new Set(renewed.rows.map((row) => row.id));
      return runs.filter((run) => !kept.has(run.runId)).map((run) => run.runId);
    });
  }

  async releaseLeases(runs: HeldRun[]): Promise<void> {
    if (runs.length === 0) return;
    await this.reach("release run leases", () =>
      this.pool.query(
        `UPDATE runs r SET lease_expires_ms = 0 FROM unnest($1::text[], $2::int[]) AS h(id, epoch)
         WHERE r.id = h.id AND r.epoch = h.epoch AND r.status = 'running'`,
        [runs.map((run) => run.runId), runs.map((run) => run.epoch)],
      ),
    );
  }

  async claimExpiredRuns(options: { limit: number; ownerPid: number; ownerInstance: string }): Promise<RunRecord[]> {
    return this.reach("take over expired runs", async () => {
      const client = await this.pool.connect();
      let broken = false;
      try {
        await client.query("BEGIN");
        const tx = new PgTransaction(client, true);
        // Locked rows are skipped: another node is taking them over (or their owner is writing) right now.
        const rows = await tx.query<RunRow & { expired: boolean }>(
          `SELECT *, true AS expired FROM runs WHERE status = 'running' AND lease_expires_ms < ${NOW_MS}
           ORDER BY lease_expires_ms LIMIT $1 FOR UPDATE SKIP LOCKED`,
          [options.limit],
        );
        const claimed: RunRecord[] = [];
        for (const row of rows.rows) {
          const iterations = await snapshotIterations(tx, row.id);
          claimed.push(await reopenLocked(tx, row, { ...options, iterations, node: this.node, leaseMs: this.leaseMs }));
          tx.keep();
        }
        await tx.finish();
        await client.query("COMMIT");
        return claimed;
      } catch (error) {
        broken = true;
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release(broken ? true : undefined);
      }
    });
  }

  async sendControl(control: RunControl, timeoutMs: number): Promise<ControlReply | undefined> {
    const owner = (
      await this.reach("find the run's owner", () =>
        this.pool.query<{ owner_node: string | null }>("SELECT owner_node FROM runs WHERE id = $1 AND status = 'running'", [control.runId]),
      )
    ).rows[0]?.owner_node;
    if (!owner) return undefined;
    const id = (
      await this.reach("send a control", () =>
        this.pool.query<{ id: number }>(
          `WITH sent AS (INSERT INTO run_controls (run_id, node, body, created_ms) VALUES ($1, $2, $3, ${NOW_MS}) RETURNING id)
           SELECT id, pg_notify('hookbox_controls', $2) FROM sent`,
          [control.runId, owner, JSON.stringify(control)],
        ),
      )
    ).rows[0].id;
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        const reply = (await this.pool.query<{ reply: string | null }>("SELECT reply FROM run_controls WHERE id = $1", [id])).rows[0]
          ?.reply;
        if (reply) return JSON.parse(reply) as ControlReply;
        const left = deadline - Date.now();
        if (left <= 0)
          return {
            ok: false,
            status: 503,
            code: "OWNER_UNREACHABLE",
            message: `node ${owner}, which runs run ${control.runId}, did not answer within ${timeoutMs} ms; retry shortly`,
          };
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, CONTROL_POLL_MS));
          this.replyWaiters.set(id, () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    } finally {
      this.replyWaiters.delete(id);
      await this.pool.query("DELETE FROM run_controls WHERE id = $1", [id]).catch(() => undefined);
    }
  }

  serveControls(handler: (control: RunControl) => Promise<ControlReply>): () => void {
    let running: Promise<void> | undefined;
    let again = false;
    const take = () => {
      if (running) {
        again = true;
        return;
      }
      running = this.answerControls(handler)
        .catch(() => undefined)
        .finally(() => {
          running = undefined;
          if (again) {
            again = false;
            take();
          }
        });
    };
    const unlisten = this.listener.on("hookbox_controls", (node) => node === this.node && take());
    const unreconnect = this.listener.onReconnect(take);
    const timer = setInterval(take, CONTROL_POLL_MS * 2);
    timer.unref();
    take();
    return () => {
      unlisten();
      unreconnect();
      clearInterval(timer);
    };
  }

  private async answerControls(handler: (control: RunControl) => Promise<ControlReply>): Promise<void> {
    const pending = await this.pool.query<{ id: number; body: string }>(
      "SELECT id, body FROM run_controls WHERE node = $1 AND reply IS NULL ORDER BY id",
      [this.node],
    );
    for (const row of pending.rows) {
      let reply: ControlReply;
      try {
        reply = await handler(JSON.parse(row.body) as RunControl);
      } catch (error) {
        reply = { ok: false, status: 500, code: "INTERNAL", message: (error as Error)?.message ?? String(error) };
      }
      // Answered once: a control another pass already answered keeps its reply.
      await this.pool.query(
        `WITH answered AS (UPDATE run_controls SET reply = $2 WHERE id = $1 AND reply IS NULL RETURNING id)
         SELECT pg_notify('hookbox_replies', $1::text) FROM answered`,
        [row.id, JSON.stringify(reply)],
      );
    }
  }

  watchRun(runId: string, listener: () => void): () => void {
    let set = this.watchers.get(runId);
    if (!set) this.watchers.set(runId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.watchers.get(runId) === set) this.watchers.delete(runId);
    };
  }

  private wake(runId: string): void {
    for (const listener of this.watchers.get(runId) ?? []) listener();
  }

  async takeToken(key: string, perMinute: number): Promise<number> {
    return this.reach("take a rate-limit token", async () => {
      const refill = `LEAST($2::float8, b.tokens + (${NOW_MS} - b.updated_ms) * $2::float8 / 60000.0)`;
      const taken = await this.pool.query(
        `INSERT INTO rate_buckets AS b (key, tokens, updated_ms) VALUES ($1, $2::float8 - 1, ${NOW_MS})
         ON CONFLICT (key) DO UPDATE SET tokens = ${refill} - 1, updated_ms = ${NOW_MS}
         WHERE ${refill} >= LEAST(1, $2::float8) RETURNING tokens`,
        [key, perMinute],
      );
      if (taken.rowCount === 1) return 0;
      const row = (
        await this.pool.query<{ tokens: number }>(`SELECT ${refill.replace(/\$2/g, "$1")} AS tokens FROM rate_buckets b WHERE key = $2`, [
          perMinute,
          key,
        ])
      ).rows[0];
      const needed = Math.min(1, perMinute);
      return Math.max(1, Math.ceil(((needed - (row?.tokens ?? 0)) * 60_000) / perMinute));
    });
  }

  close(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}
