import { inTransaction, prepare, type SqliteDatabase } from "./sqlite-driver.js";
import type { Block, Turn } from "../turns/turn.js";
import type { HookboxEvent } from "../events/types.js";
import type { SnapshotPhase } from "../host/types.js";
import { HookboxError } from "../errors.js";
import { openDatabase, storeError } from "./open-database.js";
import { isOwnerAlive } from "./process-alive.js";
import { SqlitePolicyTables } from "./sqlite-policy.js";
import { WithPolicyTables } from "./with-policy-tables.js";
import { interruptedEvent } from "./interrupted.js";
import { runUsageOf, totalsOf, usageDelta, type UsageDelta, type UsageTotals } from "./usage.js";
import type { RunUsage } from "../host/usage.js";
import { pauseChange } from "./pause-events.js";
import { SqliteKv } from "./sqlite-kv.js";
import { prepareStatements, type SqliteStatements } from "./sqlite-statements.js";
import type {
  PageOptions,
  PauseRecord,
  RunRecord,
  SessionRecord,
  SessionSummary,
  SnapshotRecord,
  Store,
  StoredEventText,
  StoredSnapshotText,
  TenantUsage,
  WriteOptions,
} from "./types.js";
import { SqliteTenantUsage } from "./sqlite-usage.js";
import { ledgerRowBytes } from "./row-bytes.js";
import {
  rowToPause,
  rowToRun,
  rowToSession,
  rowToSnapshot,
  type PauseRow,
  type RunRow,
  type SessionRow,
  type SnapshotRow,
} from "./rows.js";

type EventRow = { seq: number; type: string; body: string };

/** The embedded default store: one SQLite file in WAL mode; each write is its own committed transaction. */
export class SqliteStore extends WithPolicyTables implements Store {
  private readonly db: SqliteDatabase;
  private readonly statements: SqliteStatements;
  readonly kv: SqliteKv;
  private readonly usage: SqliteTenantUsage;
  protected readonly policy: SqlitePolicyTables;

  constructor(readonly location: string) {
    super();
    this.db = openDatabase(location);
    const db = this.db;
    this.kv = new SqliteKv(db, location);
    this.usage = new SqliteTenantUsage(db);
    this.statements = prepareStatements(db);
    this.policy = new SqlitePolicyTables(db, this.usage, (what, action) => this.write(what, action));
    this.interruptOrphanedRuns();
  }

  async createSession(session: SessionRecord, options?: WriteOptions): Promise<void> {
    const tenantConfig = JSON.stringify(session.tenantConfig);
    const defaults = JSON.stringify(session.defaults);
    const initialTurn = session.initialTurn ? JSON.stringify(session.initialTurn) : null;
    this.write("create session", () =>
      inTransaction(this.db, () => {
        this.usage.charge(session.tenant, tenantConfig.length + defaults.length + (initialTurn?.length ?? 0), options);
        this.statements.insertSession.run(
          session.id,
          session.tenant,
          tenantConfig,
          defaults,
          session.createdMs,
          session.forkedFrom ? JSON.stringify(session.forkedFrom) : null,
          initialTurn,
        );
      }),
    );
  }

  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const row = this.statements.getSession.get(sessionId) as SessionRow | undefined;
    return row && rowToSession(row);
  }

  async listSessions(filter: { tenant?: string } = {}): Promise<SessionSummary[]> {
    const rows = prepare(
      this.db,

      `SELECT s.id, s.tenant, s.created_ms,
           (SELECT count(*) FROM runs r WHERE r.session_id = s.id) AS runs,
           (SELECT json_object('id', r.id, 'status', r.status, 'prompt', r.prompt, 'startedMs', r.started_ms)
              FROM runs r WHERE r.session_id = s.id ORDER BY r.started_ms DESC, r.rowid DESC LIMIT 1) AS last_run
         FROM sessions s ${filter.tenant === undefined ? "" : "WHERE s.tenant = ?"} ORDER BY s.created_ms, s.rowid`,
    ).all(...(filter.tenant === undefined ? [] : [filter.tenant])) as {
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

  async createRun(run: RunRecord, options?: WriteOptions): Promise<void> {
    const runOptions = JSON.stringify(run.options);
    this.write("create run", () =>
      inTransaction(this.db, () => {
        this.statements.insertRun.run(
          run.id,
          run.sessionId,
          run.inferenceId,
          run.prompt,
          runOptions,
          run.status,
          run.iterations,
          run.startedMs,
          run.lastSeq,
          run.ownerPid ?? null,
          run.ownerInstance ?? null,
          run.deployment ? JSON.stringify(run.deployment) : null,
          run.deployment?.id ?? null,
        );
        this.usage.chargeRun(run.id, run.prompt.length + runOptions.length, options);
      }),
    );
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const row = this.statements.getRun.get(runId) as RunRow | undefined;
    return row && rowToRun(row);
  }

  async listRuns(sessionId: string, page: { offset?: number; limit?: number } = {}): Promise<RunRecord[]> {
    return (this.statements.runsOfSession.all(sessionId, page.limit ?? -1, page.offset ?? 0) as RunRow[]).map(rowToRun);
  }

  async countRuns(sessionId: string): Promise<number> {
    return (this.statements.countRuns.get(sessionId) as { n: number }).n;
  }

  async reopenRun(runId: string, options: { ownerPid: number; ownerInstance: string; iterations: number }): Promise<void> {
    this.write("reopen run", () => this.statements.reopenRun.run(options.ownerPid, options.ownerInstance, options.iterations, runId));
  }

  async appendEvent(runId: string, event: HookboxEvent, options?: WriteOptions): Promise<void> {
    this.write(`append event ${event.seq} of run ${runId}`, () => this.appendEventNow(runId, event, options));
  }

  private appendEventNow(runId: string, event: HookboxEvent, options?: WriteOptions): void {
    const body = JSON.stringify(event);
    inTransaction(this.db, () => {
      const s = this.statements;
      const advanced = s.advanceSeq.run(event.seq, event.type === "inference-finished" ? 1 : 0, event.inferenceId, runId, event.seq - 1);
      if (advanced.changes !== 1) {
        const run = this.statements.getRun.get(runId) as RunRow | undefined;
        throw new HookboxError(
          "STORE",
          run ? `event seq ${event.seq} does not follow committed seq ${run.last_seq} of run ${runId}` : `unknown run ${runId}`,
          { runId, seq: event.seq },
        );
      }
      const spent = usageDelta(event);
      this.usage.chargeRun(runId, body.length + ledgerRowBytes(spent), options);
      s.insertEvent.run(runId, event.seq, event.type, body);
      if (spent) {
        const u = spent;
        s.insertUsage.run(
          event.timestampMs,
          u.runs,
          u.inferences,
          u.inputTokens,
          u.outputTokens,
          u.costUsd,
          u.toolCalls,
          u.sandboxCpuMs,
          runId,
        );
      }
      const pause = pauseChange(event);
      if (pause?.open) {
        const { pauseId, phase, deadlineMs, pending, openedMs } = pause.open;
        s.openPause.run(pauseId, runId, phase, deadlineMs, JSON.stringify(pending), openedMs);
      } else if (pause?.close) {
        s.closePause.run(pause.close.reason, pause.close.pauseId, runId);
      } else if (event.type === "run-finished") {
        s.closeAllPauses.run("run-finished", runId);
        s.finishRun.run(event.status, event.reason ?? null, event.errorCode ?? null, event.iterations, event.timestampMs, runId);
      }
    });
  }

  async listEvents(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<HookboxEvent[]> {
    return (await this.listEventTexts(runId, afterSeq, page)).map((row) => JSON.parse(row.json) as HookboxEvent);
  }

  async listEventTexts(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<StoredEventText[]> {
    const rows: StoredEventText[] = [];
    let bytes = 0;
    // Rows are read one at a time, so a page stops reading at its byte bound.
    const iterator = this.statements.listEvents.iterate(runId, afterSeq, page.limit ?? -1) as IterableIterator<EventRow>;
    for (const row of iterator) {
      rows.push({ seq: row.seq, type: row.type, json: row.body });
      bytes += row.body.length;
      if (page.maxBytes !== undefined && bytes >= page.maxBytes) break;
    }
    return rows;
  }

  async saveSnapshot(runId: string, phase: SnapshotPhase, turn: Turn, options?: WriteOptions): Promise<SnapshotRecord> {
    const text = JSON.stringify(turn);
    return this.write(`save ${phase} snapshot of run ${runId}`, () =>
      inTransaction(this.db, () => {
        const run = this.statements.getRun.get(runId) as RunRow | undefined;
        if (!run) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
        this.usage.chargeRun(runId, text.length, options);
        const createdMs = Date.now();
        const row = this.statements.insertSnapshot.get(runId, runId, phase, text, run.last_seq, run.iterations, createdMs) as {
          idx: number;
        };
        return { runId, index: row.idx, phase, turn, lastSeq: run.last_seq, iterations: run.iterations, createdMs };
      }),
    );
  }

  async latestSnapshotText(runId: string): Promise<StoredSnapshotText | undefined> {
    const row = this.statements.latestSnapshot.get(runId) as SnapshotRow | undefined;
    if (!row) return undefined;
    const { turn: _turn, ...rest } = rowToSnapshot({ ...row, turn: "null" });
    return { ...rest, turnJson: row.turn };
  }

  async latestSnapshot(runId: string): Promise<SnapshotRecord | undefined> {
    const row = this.statements.latestSnapshot.get(runId) as SnapshotRow | undefined;
    return row && rowToSnapshot(row);
  }

  async listSnapshots(runId: string): Promise<SnapshotRecord[]> {
    return (this.statements.listSnapshots.all(runId) as SnapshotRow[]).map(rowToSnapshot);
  }

  async openPauses(runId: string): Promise<PauseRecord[]> {
    return (this.statements.openPauses.all(runId) as PauseRow[]).map(rowToPause);
  }

  async recordToolResult(runId: string, callId: string, toolUse: Block, options?: WriteOptions): Promise<void> {
    const block = JSON.stringify(toolUse);
    this.write(`record tool result ${callId} of run ${runId}`, () =>
      inTransaction(this.db, () => {
        this.usage.chargeRun(runId, block.length, options);
        this.statements.recordToolResult.run(runId, callId, block);
      }),
    );
  }

  async listToolResults(runId: string): Promise<Map<string, Block>> {
    const rows = this.statements.listToolResults.all(runId) as { call_id: string; block: string }[];
    return new Map(rows.map((row) => [row.call_id, JSON.parse(row.block) as Block]));
  }

  async markInterrupted(runId: string, reason: string): Promise<void> {
    this.write(`mark run ${runId} interrupted`, () => this.markInterruptedNow(runId, reason));
  }

  private markInterruptedNow(runId: string, reason: string): void {
    const run = this.statements.getRun.get(runId) as RunRow | undefined;
    if (!run || run.status !== "running") return;
    this.appendEventNow(runId, interruptedEvent(rowToRun(run), reason));
  }

  /**
   * A `running` run whose owner process is gone was cut off mid-phase: it becomes `interrupted`. A process
   * that now has the owner's pid is not its owner (process-alive.ts), so a restart that gets the same pid (PID 1
   * in a container) still recovers its predecessor's runs.
   */
  private interruptOrphanedRuns(): void {
    const rows = this.statements.runningRuns.all() as RunRow[];
    for (const row of rows) {
      const owner =
        row.owner_pid === null ? undefined : { pid: row.owner_pid, ...(row.owner_instance ? { instance: row.owner_instance } : {}) };
      if (owner && isOwnerAlive(owner)) continue;
      this.write(`mark run ${row.id} interrupted`, () =>
        this.markInterruptedNow(row.id, "the process running it ended while it was in flight"),
      );
    }
  }

  async usageTotals(tenant: string, sinceMs: number): Promise<UsageTotals> {
    return totalsOf([this.statements.usageSince.get(tenant, sinceMs) as UsageDelta]);
  }

  async runUsage(runId: string): Promise<RunUsage> {
    return runUsageOf(totalsOf([this.statements.usageOfRun.get(runId) as UsageDelta]));
  }

  async tenantUsage(tenant: string): Promise<TenantUsage> {
    return { storedBytes: this.usage.storedBytes(tenant) };
  }

  async close(): Promise<void> {
    if (this.db.isOpen) this.db.close();
  }

  private write<T>(what: string, action: () => T): T {
    try {
      return action();
    } catch (error) {
      if (error instanceof HookboxError) throw error;
      throw storeError(this.location, `could not ${what}`, error);
    }
  }
}
