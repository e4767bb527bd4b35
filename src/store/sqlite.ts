import type { Block, Turn } from "../turns/turn.js";
import { jsonOf } from "../turns/known-json.js";
import type { HookboxEvent } from "../events/types.js";
import { HookboxError } from "../errors.js";
import { openDatabase, storeError } from "./open-database.js";
import { isOwnerAlive } from "./process-alive.js";
import { SqlitePolicyTables } from "./sqlite-policy.js";
import { interruptedEvent, notResumable, resumedEvent } from "./interrupted.js";
import { totalsOf, type UsageDelta, type UsageTotals } from "./usage.js";
import type { RunUsage } from "../host/usage.js";
import { SqliteKv } from "./sqlite-kv.js";
import { inTransaction, type SqliteDatabase } from "./sqlite-driver.js";
import { prepareStatements, type SqliteStatements } from "./sqlite-statements.js";
import { SqliteBatch } from "./sqlite-batch.js";
import { CommittedPositions } from "./committed-positions.js";
import { RunNumbers } from "./run-numbers.js";
import { applyRunWrite } from "./sqlite-run-writes.js";
import { runWriteBytes } from "./row-bytes.js";
import { SqliteTurns } from "./sqlite-turns.js";
import { GroupCommit, type Applied } from "./group-commit.js";
import { StoreBase } from "./store-base.js";
import { eventJson, withEventJson } from "../events/event-json.js";
import { newSessionLog } from "./session-base.js";
import { encodeBase } from "./turn-layout.js";
import { SqliteSessionDeletes } from "./sqlite-delete.js";
import type {
  DeletedSession,
  PageOptions,
  PauseRecord,
  ReopenOptions,
  RunRecord,
  RunWrite,
  RunWriteResult,
  SessionHistory,
  SessionHistoryOptions,
  SessionRecord,
  SessionFilter,
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
} from "./types.js";
import { rowToPause, rowToRun, rowToSession, runInsertValues, type PauseRow, type RunRow, type SessionRow } from "./rows.js";

type EventRow = { seq: number; type: string; body: string };

/** A write waiting for the next group commit: what it is (for its error), and what it does in the transaction. */
interface QueuedWrite {
  what: string;
  apply(batch: SqliteBatch): unknown;
  /** The write reports to its batch every change it makes to runs' positions, logs' ends and tenants' bytes. */
  tracked?: boolean;
}

/**
 * The embedded default store: one SQLite file in WAL mode. Writes that arrive in one turn of the event loop
 * are one transaction (group-commit.ts), each in its own savepoint; reads first commit what is queued.
 */
export class SqliteStore extends StoreBase implements Store {
  private readonly db: SqliteDatabase;
  private readonly statements: SqliteStatements;
  private readonly turns: SqliteTurns;
  private readonly commits: GroupCommit<QueuedWrite, unknown>;
  private readonly deletes: SqliteSessionDeletes;
  private readonly runNumbers = new RunNumbers();
  private readonly positions = new CommittedPositions();
  readonly kv: SqliteKv;
  protected readonly policy: SqlitePolicyTables;

  constructor(readonly location: string) {
    super();
    this.db = openDatabase(location);
    this.kv = new SqliteKv(this.db, location);
    this.statements = prepareStatements(this.db);
    this.turns = new SqliteTurns(this.statements);
    this.commits = new GroupCommit((writes) => this.applyBatch(writes));
    this.policy = new SqlitePolicyTables(
      this.db,
      (what, apply) => this.submit(what, apply),
      () => this.settle(),
    );
    this.deletes = new SqliteSessionDeletes(this.db);
    this.interruptOrphanedRuns();
  }

  deleteSession(sessionId: string): Promise<DeletedSession> {
    return this.submit(`delete session ${sessionId}`, (batch) => this.deletes.apply(batch, sessionId));
  }

  async staleSessions(tenant: string, beforeMs: number, limit: number): Promise<string[]> {
    this.settle();
    return this.deletes.stale(tenant, beforeMs, limit);
  }

  async createSession(session: SessionRecord, options: WriteOptions = {}): Promise<void> {
    const tenantConfig = jsonOf(session.tenantConfig);
    const defaults = JSON.stringify(session.defaults);
    const start = newSessionLog(session);
    const base = start.layout ? encodeBase(start.layout, session.id) : null;
    await this.submitTracked("create session", (batch) => {
      this.statements.insertSession.run(
        session.id,
        session.tenant,
        tenantConfig,
        defaults,
        session.createdMs,
        session.forkedFrom ? JSON.stringify(session.forkedFrom) : null,
        base,
        start.blockTexts.length,
      );
      start.blockTexts.forEach((text, position) => this.statements.insertLogBlock.run(session.id, position, text));
      batch.setLogEnd(session.id, start.blockTexts.length);
      const blockBytes = start.blockTexts.reduce((sum, text) => sum + text.length, 0);
      batch.charge(session.tenant, tenantConfig.length + defaults.length + (base?.length ?? 0) + blockBytes, options.maxTenantBytes);
    });
  }

  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    this.settle();
    const row = this.statements.getSession.get(sessionId) as SessionRow | undefined;
    return row && rowToSession(row);
  }

  async listSessions(filter: SessionFilter = {}): Promise<SessionSummary[]> {
    this.settle();
    const rows = this.statements.listSessions.all(
      filter.tenant ?? null,
      filter.after?.createdMs ?? null,
      filter.after?.id ?? null,
      filter.limit ?? -1,
    ) as {
      id: string;
      tenant: string;
      created_ms: number;
      runs: number;
      last_run: string | null;
    }[];
    return rows.map((row) => ({
      id: row.id,
      tenant: row.tenant,
      createdMs: row.created_ms,
      runs: row.runs,
      ...(row.last_run ? { lastRun: JSON.parse(row.last_run) } : {}),
    }));
  }

  async createRun(run: RunRecord, options: CreateRunOptions = {}): Promise<void> {
    const runOptions = JSON.stringify(run.options);
    await this.submitTracked("create run", (batch) => {
      const session = this.statements.tenantOfSession.get(run.sessionId) as { tenant: string } | undefined;
      // Deleted since the run's start read it (another process, or a delete that committed first): the session is gone.
      if (!session || (options.tenant !== undefined && session.tenant !== options.tenant))
        throw new HookboxError("NOT_FOUND", `no session ${run.sessionId}: it was deleted before the run could start`, {
          sessionId: run.sessionId,
        });
      const { num } = this.statements.insertRun.get(...runInsertValues(run, runOptions)) as { num: number };
      batch.numbers.set(run.id, num);
      batch.learnRun(run.id, { lastSeq: run.lastSeq, num, epoch: 1 });
      batch.charge(session.tenant, run.prompt.length + runOptions.length, options.maxTenantBytes);
    });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.settle();
    const row = this.statements.getRun.get(runId) as RunRow | undefined;
    return row && rowToRun(row);
  }

  async listRuns(sessionId: string, page: { offset?: number; limit?: number } = {}): Promise<RunRecord[]> {
    this.settle();
    return (this.statements.runsOfSession.all(sessionId, page.limit ?? -1, page.offset ?? 0) as RunRow[]).map(rowToRun);
  }

  async countRuns(sessionId: string): Promise<number> {
    this.settle();
    return (this.statements.countRuns.get(sessionId) as { n: number }).n;
  }

  async reopenRun(runId: string, options: ReopenOptions): Promise<RunRecord> {
    return this.submit(`resume run ${runId}`, (batch) => {
      const row = this.statements.reopenRun.get(options.ownerPid, options.ownerInstance, options.iterations, runId) as RunRow | undefined;
      if (!row) throw notResumable(runId, (this.statements.getRun.get(runId) as RunRow | undefined)?.status);
      const run = rowToRun(row);
      const event = resumedEvent(run, options);
      applyRunWrite(this.statements, batch, { runId, events: [{ event, json: eventJson(event) }], epoch: run.epoch });
      return { ...run, lastSeq: event.seq };
    });
  }

  write(write: RunWrite): Promise<RunWriteResult> {
    const what = write.snapshot ? `save ${write.snapshot.phase} snapshot of run ${write.runId}` : `write run ${write.runId}`;
    return this.submitTracked(what, (batch) => applyRunWrite(this.statements, batch, write), runWriteBytes(write));
  }

  async listEvents(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<HookboxEvent[]> {
    return (await this.listEventTexts(runId, afterSeq, page)).map((row) => withEventJson(JSON.parse(row.json) as HookboxEvent, row.json));
  }

  async listEventTexts(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<StoredEventText[]> {
    this.settle();
    const rows: StoredEventText[] = [];
    let bytes = 0;
    // Rows are read one at a time, so a page stops reading at its byte bound.
    for (const row of this.statements.listEvents.iterate(runId, afterSeq, page.limit ?? -1) as Iterable<EventRow>) {
      rows.push({ seq: row.seq, type: row.type, json: row.body });
      bytes += row.body.length;
      if (page.maxBytes !== undefined && bytes >= page.maxBytes) break;
    }
    return rows;
  }

  async latestSnapshotInfo(runId: string): Promise<SnapshotInfo | undefined> {
    this.settle();
    return this.read("read a snapshot", () => this.turns.latestSnapshotInfo(runId));
  }

  async listSnapshotInfos(runId: string): Promise<SnapshotInfo[]> {
    this.settle();
    return this.read("read snapshots", () => this.turns.listSnapshotInfos(runId));
  }

  async readTurn(stored: StoredTurn): Promise<Turn> {
    this.settle();
    return this.read("read a turn", () => this.turns.readTurn(stored));
  }

  async readTurnText(stored: StoredTurn): Promise<string> {
    this.settle();
    return this.read("read a turn", () => this.turns.readTurnText(stored));
  }

  async sessionHistory(sessionId: string, options: SessionHistoryOptions = {}): Promise<SessionHistory | undefined> {
    // A run start's read (types.ts, SessionHistoryOptions): no queued write is this session's, so none is committed first.
    if (!options.sessionWritesCommitted) this.settle();
    return this.read("read a session's history", () => {
      const session = this.statements.getSession.get(sessionId) as { base: string | null; initial_turn: string | null } | undefined;
      return this.turns.sessionHistory(sessionId, options.beforeRunId, session);
    });
  }

  async openPauses(runId: string): Promise<PauseRecord[]> {
    this.settle();
    return (this.statements.openPauses.all(runId) as PauseRow[]).map(rowToPause);
  }

  async listTenantPauses(tenant: string): Promise<TenantPauseRecord[]> {
    this.settle();
    return (this.statements.tenantPauses.all(tenant) as (PauseRow & { session_id: string })[]).map((row) => ({
      ...rowToPause(row),
      sessionId: row.session_id,
    }));
  }

  async listTenantRuns(query: TenantRunQuery): Promise<RunRecord[]> {
    this.settle();
    const rows = this.statements.tenantRuns.all(
      query.tenant,
      query.sessionId ?? null,
      query.status ?? null,
      query.sinceMs ?? null,
      query.beforeRunId ?? null,
      query.limit,
    ) as RunRow[];
    return rows.map(rowToRun);
  }

  async listToolResults(runId: string): Promise<Map<string, Block>> {
    this.settle();
    const rows = this.statements.listToolResults.all(runId) as { call_id: string; block: string }[];
    return new Map(rows.map((row) => [row.call_id, JSON.parse(row.block) as Block]));
  }

  async markInterrupted(runId: string, reason: string, options: { epoch?: number } = {}): Promise<void> {
    await this.submit(`mark run ${runId} interrupted`, (batch) => this.interruptNow(batch, runId, reason, options.epoch));
  }

  /** Appends `run-interrupted` to a run that is still `running` (a finished run, or one of a later epoch, is left alone). */
  private interruptNow(batch: SqliteBatch, runId: string, reason: string, epoch?: number): void {
    const row = this.statements.getRun.get(runId) as RunRow | undefined;
    if (!row || row.status !== "running") return;
    const run = rowToRun(row);
    if (epoch !== undefined && run.epoch !== epoch) return;
    const event = interruptedEvent(run, reason);
    applyRunWrite(this.statements, batch, { runId, events: [{ event, json: eventJson(event) }] });
  }

  /**
   * A `running` run whose owner process is gone was cut off mid-phase: it becomes `interrupted`. A process
   * that now has the owner's pid is not its owner (process-alive.ts), so a restart that gets the same pid (PID 1
   * in a container) still recovers its predecessor's runs.
   */
  private interruptOrphanedRuns(): void {
    const orphans = (this.statements.runningRuns.all() as RunRow[]).filter((row) => {
      const owner =
        row.owner_pid === null ? undefined : { pid: row.owner_pid, ...(row.owner_instance ? { instance: row.owner_instance } : {}) };
      return !(owner && isOwnerAlive(owner));
    });
    const results = this.applyBatch(
      orphans.map((row) => ({
        what: `mark run ${row.id} interrupted`,
        apply: (batch) => this.interruptNow(batch, row.id, "the process running it ended while it was in flight"),
      })),
    );
    const failed = results.find((result) => !result.ok);
    if (failed && !failed.ok) throw failed.error;
  }

  async usageTotals(tenant: string, sinceMs: number): Promise<UsageTotals> {
    this.settle();
    // All time is a running total (kept beside the tenant's stored bytes); a period sums the ledger rows in it.
    const row = sinceMs <= 0 ? this.statements.usageTotals.get(tenant) : this.statements.usageSince.get(tenant, sinceMs);
    return totalsOf(row ? [row as UsageDelta] : []);
  }

  async runUsage(runId: string): Promise<RunUsage> {
    this.settle();
    // Kept on the run's row, beside its seq (a run that is not stored has used nothing).
    return (this.statements.usageOfRun.get(runId) as RunUsage | undefined) ?? { inputTokens: 0, outputTokens: 0, costUsd: 0 };
  }

  async tenantUsage(tenant: string): Promise<TenantUsage> {
    this.settle();
    return { storedBytes: (this.statements.tenantBytes.get(tenant) as { bytes: number } | undefined)?.bytes ?? 0 };
  }

  async storedBytesByTenant(): Promise<Map<string, number>> {
    this.settle();
    return new Map((this.statements.allTenantBytes.all() as { tenant: string; bytes: number }[]).map((row) => [row.tenant, row.bytes]));
  }

  async close(): Promise<void> {
    if (!this.db.isOpen) return;
    this.commits.flush();
    this.db.close();
  }

  private submit<T>(what: string, apply: (batch: SqliteBatch) => T, bytes = 0, tracked = false): Promise<T> {
    if (!this.db.isOpen) return Promise.reject(new HookboxError("STORE", `store ${this.location} is closed: could not ${what}`));
    return this.commits.submit({ what, apply, tracked }, bytes) as Promise<T>;
  }

  /** A write whose changes to runs' positions, logs' ends and tenants' bytes all go through its batch. */
  private submitTracked<T>(what: string, apply: (batch: SqliteBatch) => T, bytes = 0): Promise<T> {
    return this.submit(what, apply, bytes, true);
  }

  /**
   * One transaction with a batch of its own. Once it commits, what the batch learnt is the committed state the next
   * transactions start from (committed-positions.ts); a failed one teaches nothing, and the committed state is
   * dropped with it (read again, rather than trusted after a failed COMMIT).
   */
  private inBatch<T>(action: (batch: SqliteBatch) => T): T {
    let batch: SqliteBatch | undefined;
    let result: T;
    try {
      result = inTransaction(this.db, () => {
        this.positions.check((this.statements.dataVersion.get() as { data_version: number }).data_version);
        batch = new SqliteBatch(this.statements, this.runNumbers, this.positions);
        const value = action(batch);
        batch.finish();
        return value;
      });
    } catch (error) {
      this.positions.forget();
      throw error;
    }
    this.positions.committed(batch!);
    return result;
  }

  /** Commits what is queued, so a read sees every write issued before it. */
  private settle(): void {
    if (this.commits.pending) this.commits.flush();
  }

  /**
   * One transaction for a batch of writes. Almost always every write is kept, so the batch is first applied
   * without a savepoint per write (two statements each, and a copy of every page a later write of the batch
   * changes again); when a write is refused, that attempt is rolled back whole and the batch is applied again
   * with each write in a savepoint, so the refused one is rolled back alone. A write's `apply` only reads and
   * writes the database and the batch (made anew for each attempt), so applying it again is safe.
   */
  private applyBatch(writes: QueuedWrite[]): Applied<unknown>[] {
    if (writes.length === 0) return [];
    let refusal: { error: unknown } | undefined;
    try {
      return this.inBatch((batch) =>
        writes.map((write): Applied<unknown> => {
          if (!write.tracked) batch.forgetLearnt();
          try {
            return { ok: true, value: write.apply(batch) };
          } catch (error) {
            refusal = { error };
            throw error;
          }
        }),
      );
    } catch (error) {
      // The transaction itself failed (BEGIN, COMMIT: a lock held too long, a full disk): every write of it failed.
      if (!refusal) throw this.asStoreError(writes.length === 1 ? writes[0].what : `commit ${writes.length} writes`, error);
    }
    if (writes.length === 1) return [{ ok: false, error: this.asStoreError(writes[0].what, refusal.error) }];
    return this.applyEach(writes);
  }

  /** A batch with each write in a savepoint: one refused is rolled back alone. */
  private applyEach(writes: QueuedWrite[]): Applied<unknown>[] {
    const s = this.statements;
    try {
      return this.inBatch((batch) =>
        writes.map((write): Applied<unknown> => {
          if (!write.tracked) batch.forgetLearnt();
          s.savepoint.run();
          try {
            const value = write.apply(batch);
            s.release.run();
            return { ok: true, value };
          } catch (error) {
            batch.forgetLearnt();
            try {
              s.rollbackTo.run();
              s.release.run();
            } catch {
              // SQLite rolled the whole transaction back (a full disk): every write of it failed, with this error.
              throw error;
            }
            return { ok: false, error: this.asStoreError(write.what, error) };
          }
        }),
      );
    } catch (error) {
      throw this.asStoreError(`commit ${writes.length} writes`, error);
    }
  }

  private read<T>(what: string, action: () => T): T {
    try {
      return action();
    } catch (error) {
      throw this.asStoreError(what, error);
    }
  }

  private asStoreError(what: string, error: unknown): HookboxError {
    return error instanceof HookboxError ? error : storeError(this.location, `could not ${what}`, error);
  }
}
