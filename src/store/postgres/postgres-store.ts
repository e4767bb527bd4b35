import { DEFAULT_LEASE_MS, type PostgresStoreOptions } from "./options.js";
import { jsonOf } from "../../turns/known-json.js";
import { hostname } from "node:os";
import type { Block, Turn } from "../../turns/turn.js";
import type { HookboxEvent } from "../../events/types.js";
import type { RunUsage } from "../../host/usage.js";
import { HookboxError } from "../../errors.js";
import { eventJson, withEventJson } from "../../events/event-json.js";
import { StoreBase } from "../store-base.js";
import { interruptedEvent, notResumable } from "../interrupted.js";
import { runUsageOf, totalsOf, type UsageDelta, type UsageTotals } from "../usage.js";
import { runWriteBytes } from "../row-bytes.js";
import { newSessionLog } from "../session-base.js";
import { encodeBase } from "../turn-layout.js";
import { rowToPause, rowToRun, rowToSession, runInsertValues, type PauseRow, type RunRow, type SessionRow } from "../rows.js";
import type {
  DeletedSession,
  PageOptions,
  PauseRecord,
  ReopenOptions,
  RunRecord,
  RunWrite,
  RunWriteResult,
  SessionHistory,
  SessionFilter,
  SessionRecord,
  SessionSummary,
  SnapshotInfo,
  Store,
  StoredEventText,
  StoredTurn,
  TenantPauseRecord,
  TenantRunQuery,
  TenantUsage,
  WriteOptions,
  CreateRunOptions,
} from "../types.js";
import { createPool, pgStoreError, redactedUrl, violates, type Pool } from "./pg-driver.js";
import { migrate } from "./pg-migrations.js";
import { PgGroupCommit, type PgTransaction } from "./pg-commit.js";
import { applyPgRunWrite } from "./pg-run-writes.js";
import { PgTurns } from "./pg-turns.js";
import { PgPolicyTables } from "./pg-policy.js";
import { PgKv } from "./pg-kv.js";
import { PgListener } from "./pg-listener.js";
import { PgCluster } from "./pg-cluster.js";
import { NOW_MS } from "./pg-sql.js";
import { lockRun, reopenLocked } from "./pg-takeover.js";
import { deleteSessionIn, STALE_SESSIONS } from "./pg-session-deletes.js";

const USAGE_COLUMNS = ["runs", "inferences", "input_tokens", "output_tokens", "cost_usd", "tool_calls", "sandbox_cpu_ms"];
const USAGE_NAMES = ["runs", "inferences", "inputTokens", "outputTokens", "costUsd", "toolCalls", "sandboxCpuMs"];
const USAGE_SUMS = USAGE_COLUMNS.map((column, i) => `coalesce(sum(${column}), 0)::float8 AS "${USAGE_NAMES[i]}"`).join(", ");

/**
 * The store on PostgreSQL, for many `hookbox serve` nodes on one database: the same tables and writes as the
 * SQLite store (group commit, one conditional update per run write), plus leases, takeover, controls and
 * notifications (pg-cluster.ts). Open it with `PostgresStore.open(url)`.
 */
export class PostgresStore extends StoreBase implements Store {
  readonly location: string;
  readonly kv: PgKv;
  readonly cluster: PgCluster;
  protected readonly policy: PgPolicyTables;
  private readonly turns: PgTurns;
  private readonly commits: PgGroupCommit;
  private closed = false;

  private constructor(
    private readonly pool: Pool,
    private readonly listener: PgListener,
    location: string,
    options: Required<Pick<PostgresStoreOptions, "node" | "leaseMs">>,
  ) {
    super();
    this.location = location;
    this.commits = new PgGroupCommit(pool, location);
    this.turns = new PgTurns(pool);
    this.kv = new PgKv(pool, location);
    this.policy = new PgPolicyTables(
      pool,
      (what, tenant, apply) => this.submit(what, tenant, apply),
      () => this.settle(),
    );
    this.cluster = new PgCluster(pool, listener, location, options.node, options.leaseMs);
  }

  /** Connects, migrates (safely when several nodes start at once) and listens for the other nodes' notifications. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const location = redactedUrl(url);
    const node = options.node ?? `${hostname()}:${process.pid}`;
    const pool = await createPool(url, { max: options.poolSize ?? 10, application: `hookbox ${node}` });
    const listener = new PgListener(url);
    try {
      await migrate(pool, location);
      await listener.start().catch((error: unknown) => {
        throw pgStoreError(location, "listen for notifications", error);
      });
    } catch (error) {
      await listener.close();
      await pool.end().catch(() => undefined);
      throw error;
    }
    return new PostgresStore(pool, listener, location, { node, leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS });
  }

  async createSession(session: SessionRecord, options: WriteOptions = {}): Promise<void> {
    const tenantConfig = jsonOf(session.tenantConfig);
    const defaults = JSON.stringify(session.defaults);
    const start = newSessionLog(session);
    const base = start.layout ? encodeBase(start.layout, session.id) : null;
    await this.submit("create session", session.tenant, async (tx) => {
      await tx.query(
        `INSERT INTO sessions (id, tenant, tenant_config, defaults, created_ms, forked_from, base, log_length)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          session.id,
          session.tenant,
          tenantConfig,
          defaults,
          session.createdMs,
          session.forkedFrom ? JSON.stringify(session.forkedFrom) : null,
          base,
          start.blockTexts.length,
        ],
      );
      if (start.blockTexts.length > 0)
        await tx.query("INSERT INTO session_log (session_id, pos, block) SELECT $1, * FROM unnest($2::int[], $3::text[])", [
          session.id,
          start.blockTexts.map((_, position) => position),
          start.blockTexts,
        ]);
      const blockBytes = start.blockTexts.reduce((sum, text) => sum + text.length, 0);
      await tx.charge(session.tenant, tenantConfig.length + defaults.length + (base?.length ?? 0) + blockBytes, options.maxTenantBytes);
    });
  }

  deleteSession(sessionId: string): Promise<DeletedSession> {
    return this.submit(`delete session ${sessionId}`, undefined, (tx) => deleteSessionIn(tx, sessionId));
  }

  async staleSessions(tenant: string, beforeMs: number, limit: number): Promise<string[]> {
    return (await this.read<{ id: string }>("list stale sessions", STALE_SESSIONS, [tenant, beforeMs, limit])).map((row) => row.id);
  }

  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const row = (await this.read<SessionRow>("read a session", "SELECT * FROM sessions WHERE id = $1", [sessionId]))[0];
    return row && rowToSession(row);
  }

  async listSessions(filter: SessionFilter = {}): Promise<SessionSummary[]> {
    const rows = await this.read<{ id: string; tenant: string; created_ms: number; runs: number; last_run: string | null }>(
      "list sessions",
      `SELECT s.id, s.tenant, s.created_ms,
         (SELECT count(*) FROM runs r WHERE r.session_id = s.id)::int AS runs,
         (SELECT json_build_object('id', r.id, 'status', r.status, 'prompt', r.prompt, 'startedMs', r.started_ms)::text
            FROM runs r WHERE r.session_id = s.id ORDER BY r.started_ms DESC, r.ord DESC LIMIT 1) AS last_run
       FROM sessions s WHERE ($1::text IS NULL OR s.tenant = $1)
         AND ($2::bigint IS NULL OR s.created_ms > $2 OR (s.created_ms = $2 AND s.id > $3))
       ORDER BY s.created_ms, s.id LIMIT $4`,
      [filter.tenant ?? null, filter.after?.createdMs ?? null, filter.after?.id ?? null, filter.limit ?? null],
    );
    return rows.map((row) => ({
      id: row.id,
      tenant: row.tenant,
      createdMs: row.created_ms,
      runs: row.runs,
      ...(row.last_run ? { lastRun: JSON.parse(row.last_run) } : {}),
    }));
  }

  /** The run is owned by this node from the start: epoch 1, a lease of `leaseMs`. One running run per session. */
  async createRun(run: RunRecord, options: CreateRunOptions = {}): Promise<void> {
    const runOptions = JSON.stringify(run.options);
    await this.submit("create run", undefined, async (tx) => {
      // FOR KEY SHARE orders this start with a delete of the session (which locks its row FOR UPDATE): a delete that
      // came first leaves no row to find (NOT_FOUND), and a delete that comes after waits and then sees this run running.
      const session = (await tx.query<{ tenant: string }>("SELECT tenant FROM sessions WHERE id = $1 FOR KEY SHARE", [run.sessionId]))
        .rows[0];
      if (!session || (options.tenant !== undefined && session.tenant !== options.tenant))
        throw new HookboxError("NOT_FOUND", `no session ${run.sessionId}: it was deleted before the run could start`, {
          sessionId: run.sessionId,
        });
      try {
        await tx.query("SAVEPOINT hookbox_run");
        await tx.query(
          `INSERT INTO runs (id, session_id, inference_id, prompt, options, status, iterations, started_ms, last_seq, owner_pid,
             owner_instance, deployment, deployment_id, epoch, owner_node, lease_expires_ms)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1, $14, ${NOW_MS} + $15)`,
          [...runInsertValues(run, runOptions), run.status === "running" ? this.cluster.node : null, this.cluster.leaseMs],
        );
        await tx.query("RELEASE hookbox_run");
      } catch (error) {
        if (!violates(error, "runs_one_active")) throw error;
        await tx.query("ROLLBACK TO hookbox_run");
        const active = (
          await tx.query<{ id: string; owner_node: string | null }>(
            "SELECT id, owner_node FROM runs WHERE session_id = $1 AND status = 'running'",
            [run.sessionId],
          )
        ).rows[0];
        throw new HookboxError(
          "SESSION_BUSY",
          `session ${run.sessionId} already has an active run (${active?.id ?? "being started"}${active?.owner_node ? ` on node ${active.owner_node}` : ""}); wait for it to finish or cancel it first`,
          { sessionId: run.sessionId, ...(active ? { runId: active.id } : {}) },
        );
      }
      await tx.charge(session.tenant, run.prompt.length + runOptions.length, options.maxTenantBytes);
    });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const row = (await this.read<RunRow>("read a run", "SELECT * FROM runs WHERE id = $1", [runId]))[0];
    return row && rowToRun(row);
  }

  async listRuns(sessionId: string, page: { offset?: number; limit?: number } = {}): Promise<RunRecord[]> {
    return (
      await this.read<RunRow>("list runs", "SELECT * FROM runs WHERE session_id = $1 ORDER BY started_ms, ord LIMIT $2 OFFSET $3", [
        sessionId,
        page.limit ?? null,
        page.offset ?? 0,
      ])
    ).map(rowToRun);
  }

  async countRuns(sessionId: string): Promise<number> {
    return (await this.read<{ n: number }>("count runs", "SELECT count(*)::int AS n FROM runs WHERE session_id = $1", [sessionId]))[0].n;
  }

  async reopenRun(runId: string, options: ReopenOptions): Promise<RunRecord> {
    return this.submit(`resume run ${runId}`, undefined, async (tx) => {
      const row = await lockRun(tx, runId);
      if (!row) throw notResumable(runId, undefined);
      return reopenLocked(tx, row, { ...options, leaseMs: this.cluster.leaseMs });
    });
  }

  write(write: RunWrite): Promise<RunWriteResult> {
    const what = write.snapshot ? `save ${write.snapshot.phase} snapshot of run ${write.runId}` : `write run ${write.runId}`;
    return this.submit(
      what,
      write.maxTenantBytes !== undefined ? write.tenant : undefined,
      (tx) => applyPgRunWrite(tx, write),
      runWriteBytes(write),
    );
  }

  async listEvents(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<HookboxEvent[]> {
    return (await this.listEventTexts(runId, afterSeq, page)).map((row) => withEventJson(JSON.parse(row.json) as HookboxEvent, row.json));
  }

  async listEventTexts(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<StoredEventText[]> {
    // A byte-bounded page: the running sum stops the scan after the event that reaches maxBytes.
    const rows = await this.read<{ seq: number; type: string; body: string }>(
      "read events",
      page.maxBytes === undefined
        ? "SELECT seq, type, body FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
        : `SELECT seq, type, body FROM (
             SELECT seq, type, body, sum(length(body)) OVER (ORDER BY seq) - length(body) AS before
             FROM (SELECT * FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3) e
           ) p WHERE before < $4 ORDER BY seq`,
      page.maxBytes === undefined ? [runId, afterSeq, page.limit ?? null] : [runId, afterSeq, page.limit ?? null, page.maxBytes],
    );
    return rows.map((row) => ({ seq: row.seq, type: row.type, json: row.body }));
  }

  async latestSnapshotInfo(runId: string): Promise<SnapshotInfo | undefined> {
    await this.settle();
    return this.reading("read a snapshot", () => this.turns.latestSnapshotInfo(runId));
  }

  async listSnapshotInfos(runId: string): Promise<SnapshotInfo[]> {
    await this.settle();
    return this.reading("read snapshots", () => this.turns.listSnapshotInfos(runId));
  }

  async readTurn(stored: StoredTurn): Promise<Turn> {
    await this.settle();
    return this.reading("read a turn", () => this.turns.readTurn(stored));
  }

  async readTurnText(stored: StoredTurn): Promise<string> {
    await this.settle();
    return this.reading("read a turn", () => this.turns.readTurnText(stored));
  }

  async sessionHistory(sessionId: string, options: { beforeRunId?: string } = {}): Promise<SessionHistory | undefined> {
    await this.settle();
    return this.reading("read a session's history", () => this.turns.sessionHistory(sessionId, options.beforeRunId));
  }

  async openPauses(runId: string): Promise<PauseRecord[]> {
    return (
      await this.read<PauseRow>("read pauses", "SELECT * FROM pauses WHERE run_id = $1 AND closed_reason IS NULL ORDER BY opened_ms", [
        runId,
      ])
    ).map(rowToPause);
  }

  async listTenantPauses(tenant: string): Promise<TenantPauseRecord[]> {
    const rows = await this.read<PauseRow & { session_id: string }>(
      "read a tenant's pauses",
      `SELECT p.*, r.session_id FROM runs r JOIN sessions s ON s.id = r.session_id
         JOIN pauses p ON p.run_id = r.id AND p.closed_reason IS NULL
       WHERE r.status = 'running' AND s.tenant = $1 ORDER BY p.opened_ms, p.pause_id`,
      [tenant],
    );
    return rows.map((row) => ({ ...rowToPause(row), sessionId: row.session_id }));
  }

  async listTenantRuns(query: TenantRunQuery): Promise<RunRecord[]> {
    const rows = await this.read<RunRow>(
      "list a tenant's runs",
      `SELECT r.* FROM runs r JOIN sessions s ON s.id = r.session_id
       WHERE s.tenant = $1
         AND ($2::text IS NULL OR r.session_id = $2)
         AND ($3::text IS NULL OR r.status = $3)
         AND ($4::bigint IS NULL OR r.started_ms >= $4)
         AND ($5::text IS NULL OR (r.started_ms, r.ord) < (SELECT started_ms, ord FROM runs WHERE id = $5))
       ORDER BY r.started_ms DESC, r.ord DESC LIMIT $6`,
      [query.tenant, query.sessionId ?? null, query.status ?? null, query.sinceMs ?? null, query.beforeRunId ?? null, query.limit],
    );
    return rows.map(rowToRun);
  }

  async listToolResults(runId: string): Promise<Map<string, Block>> {
    const rows = await this.read<{ call_id: string; block: string }>(
      "read tool results",
      "SELECT call_id, block FROM tool_results WHERE run_id = $1",
      [runId],
    );
    return new Map(rows.map((row) => [row.call_id, JSON.parse(row.block) as Block]));
  }

  async markInterrupted(runId: string, reason: string, options: { epoch?: number } = {}): Promise<void> {
    await this.submit(`mark run ${runId} interrupted`, undefined, async (tx) => {
      const row = await lockRun(tx, runId);
      if (!row || row.status !== "running") return;
      const run = rowToRun(row);
      if (options.epoch !== undefined && run.epoch !== options.epoch) return;
      const event = interruptedEvent(run, reason);
      await applyPgRunWrite(tx, { runId, events: [{ event, json: eventJson(event) }] });
    });
  }

  async usageTotals(tenant: string, sinceMs: number): Promise<UsageTotals> {
    // All time is a running total (kept with each ledger row); a period sums the ledger rows in it.
    const rows =
      sinceMs <= 0
        ? await this.read<UsageDelta>(
            "read usage",
            `SELECT ${USAGE_COLUMNS.map((column, i) => `${column}::float8 AS "${USAGE_NAMES[i]}"`).join(", ")} FROM usage_totals WHERE tenant = $1`,
            [tenant],
          )
        : await this.read<UsageDelta>("read usage", `SELECT ${USAGE_SUMS} FROM usage_ledger WHERE tenant = $1 AND at_ms >= $2`, [
            tenant,
            sinceMs,
          ]);
    return totalsOf(rows);
  }

  async runUsage(runId: string): Promise<RunUsage> {
    return runUsageOf(
      totalsOf(await this.read<UsageDelta>("read usage", `SELECT ${USAGE_SUMS} FROM usage_ledger WHERE run_id = $1`, [runId])),
    );
  }

  async tenantUsage(tenant: string): Promise<TenantUsage> {
    const row = (await this.read<{ bytes: number }>("read tenant usage", "SELECT bytes FROM tenant_usage WHERE tenant = $1", [tenant]))[0];
    return { storedBytes: row?.bytes ?? 0 };
  }

  async storedBytesByTenant(): Promise<Map<string, number>> {
    const rows = await this.read<{ tenant: string; bytes: number }>("read stored bytes", "SELECT tenant, bytes FROM tenant_usage", []);
    return new Map(rows.map((row) => [row.tenant, Number(row.bytes)]));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.settle();
    this.cluster.close();
    await this.listener.close();
    await this.pool.end().catch(() => undefined);
  }

  private submit<T>(what: string, tenant: string | undefined, apply: (tx: PgTransaction) => Promise<T>, bytes = 0): Promise<T> {
    if (this.closed) return Promise.reject(new HookboxError("STORE", `store ${this.location} is closed: could not ${what}`));
    return this.commits.submit<T>({ what, ...(tenant !== undefined ? { tenant } : {}), apply }, bytes);
  }

  /** Waits for what is queued, so a read sees every write issued before it. */
  private settle(): Promise<unknown> {
    return this.commits.settled();
  }

  private async read<Row>(what: string, sql: string, params: unknown[]): Promise<Row[]> {
    await this.settle();
    return this.reading(what, async () => (await this.pool.query(sql, params)).rows as Row[]);
  }

  private async reading<T>(what: string, action: () => Promise<T>): Promise<T> {
    if (this.closed) throw new HookboxError("STORE", `store ${this.location} is closed: could not ${what}`);
    try {
      return await action();
    } catch (error) {
      throw pgStoreError(this.location, what, error);
    }
  }
}
