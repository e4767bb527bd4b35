import type { Block, Turn } from "../turns/turn.js";
import { jsonOf } from "../turns/known-json.js";
import type { HookboxEvent } from "../events/types.js";
import { HookboxError } from "../errors.js";
import { interruptedEvent, leaseLostError, notResumable, resumedEvent, runStatusChange } from "./interrupted.js";
import { NO_USAGE, runUsageOf, totalsOf, usageDelta, type UsageDelta, type UsageTotals } from "./usage.js";
import type { RunUsage } from "../host/usage.js";
import { MemoryPolicyTables } from "./memory-policy.js";
import { StoreBase } from "./store-base.js";
import { pauseChange } from "./pause-events.js";
import { MemoryKv } from "./memory-kv.js";
import { eventJson, withEventJson } from "../events/event-json.js";
import { storedBlock } from "../turns/block-json.js";
import { newSessionLog } from "./session-base.js";
import { turnFromParts, turnTextFromParts } from "./stored-turn.js";
import { encodeBase, encodeSegments, pushSegment, type LogSegment, type TurnLayout } from "./turn-layout.js";
import type {
  DeletedSession,
  EventWrite,
  PageOptions,
  PauseRecord,
  ReopenOptions,
  RunRecord,
  RunWrite,
  RunWriteResult,
  SessionHistory,
  SessionRecord,
  SessionFilter,
  SessionSummary,
  SnapshotInfo,
  SnapshotWrite,
  Store,
  StoredEventText,
  StoredTurn,
  TenantPauseRecord,
  TenantRunQuery,
  TenantUsage,
  WriteOptions,
  CreateRunOptions,
} from "./types.js";
import { overQuota, quotaError } from "./quota.js";
import { refuseUndeletable } from "./deletable.js";
import { hookCallWriteBytes, ledgerRowBytes, snapshotRowBytes } from "./row-bytes.js";

interface SessionState {
  record: SessionRecord;
  /** The session's log: each block's JSON text, by position. */
  log: string[];
  base?: TurnLayout;
  runs: RunState[];
  /** Bytes charged for the session and its runs, without usage ledger rows (which outlive it): what deleting it frees. */
  bytes: number;
}

interface StoredSnapshot extends Omit<SnapshotInfo, "stored"> {
  layout: TurnLayout;
}

interface RunState {
  record: RunRecord;
  events: StoredEventText[];
  snapshots: StoredSnapshot[];
  pauses: Map<string, PauseRecord>;
  toolResults: Map<string, string>;
}

/**
 * The same contract as the SQLite store, kept in this process only (nothing survives it). For library use
 * without a file and as the baseline the bench compares the SQLite store against. It keeps what SQLite keeps
 * (texts, logs and layouts), so it costs what SQLite's model costs, minus the file.
 */
export class MemoryStore extends StoreBase implements Store {
  readonly location = ":memory:";
  readonly kv = new MemoryKv();
  private readonly sessions = new Map<string, SessionState>();
  private readonly runs = new Map<string, RunState>();
  private readonly ledger: (UsageDelta & { tenant: string; runId: string; atMs: number })[] = [];
  private readonly allTime = new Map<string, UsageDelta>();
  /** Bytes of JSON text per tenant, counted as the SQLite store counts what it writes. */
  private readonly usage = new Map<string, number>();
  protected readonly policy = new MemoryPolicyTables({
    runs: () => [...this.runs.values()].map((state) => state.record),
    session: (id) => this.sessions.get(id)?.record,
    charge: (tenant, bytes, options) => this.charge(tenant, bytes, options?.maxTenantBytes),
  });

  async createSession(session: SessionRecord, options: WriteOptions = {}): Promise<void> {
    if (this.sessions.has(session.id)) throw new HookboxError("STORE", `session ${session.id} already exists`, { sessionId: session.id });
    const start = newSessionLog(session);
    const base = start.layout ? encodeBase(start.layout, session.id) : "";
    const bytes =
      jsonOf(session.tenantConfig).length +
      JSON.stringify(session.defaults).length +
      base.length +
      start.blockTexts.reduce((sum, text) => sum + text.length, 0);
    this.charge(session.tenant, bytes, options.maxTenantBytes);
    const { base: _base, initialTurn: _initial, ...record } = session;
    this.sessions.set(session.id, {
      record: structuredClone(record),
      log: start.blockTexts,
      runs: [],
      bytes,
      ...(start.layout ? { base: start.layout } : {}),
    });
  }

  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const session = this.sessions.get(sessionId);
    return session && structuredClone(session.record);
  }

  async listSessions(filter: SessionFilter = {}): Promise<SessionSummary[]> {
    const out: SessionSummary[] = [];
    const after = filter.after;
    const sessions = [...this.sessions.values()]
      .map(({ record }) => record)
      .filter((session) => filter.tenant === undefined || session.tenant === filter.tenant)
      .filter((s) => !after || s.createdMs > after.createdMs || (s.createdMs === after.createdMs && s.id > after.id))
      .sort((a, b) => a.createdMs - b.createdMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, filter.limit ?? Infinity);
    for (const session of sessions) {
      const runs = await this.listRuns(session.id);
      const last = runs.at(-1);
      out.push({
        id: session.id,
        tenant: session.tenant,
        createdMs: session.createdMs,
        runs: runs.length,
        ...(last ? { lastRun: { id: last.id, status: last.status, prompt: last.prompt, startedMs: last.startedMs } } : {}),
      });
    }
    return out;
  }

  async deleteSession(sessionId: string): Promise<DeletedSession> {
    const session = this.sessions.get(sessionId);
    if (!session) throw new HookboxError("NOT_FOUND", `no session ${sessionId}`, { sessionId });
    const forks = [...this.sessions.values()]
      .filter(
        ({ record, base }) =>
          record.id !== sessionId &&
          (record.forkedFrom?.sessionId === sessionId || base?.segments.some((segment) => segment.session === sessionId)),
      )
      .map(({ record }) => record.id);
    refuseUndeletable(sessionId, session.runs.find((run) => run.record.status === "running")?.record.id, forks.slice(0, 5));
    for (const run of session.runs) {
      this.runs.delete(run.record.id);
      this.policy.dropHookCalls(run.record.id);
    }
    this.sessions.delete(sessionId);
    const tenant = session.record.tenant;
    this.usage.set(tenant, Math.max(0, (this.usage.get(tenant) ?? 0) - session.bytes));
    return { sessionId, tenant, freedBytes: session.bytes };
  }

  async staleSessions(tenant: string, beforeMs: number, limit: number): Promise<string[]> {
    return [...this.sessions.values()]
      .filter(({ record }) => record.tenant === tenant)
      .filter(({ record, runs }) => Math.max(record.createdMs, ...runs.map((run) => run.record.startedMs)) < beforeMs)
      .sort((a, b) => b.record.createdMs - a.record.createdMs)
      .slice(0, limit)
      .map(({ record }) => record.id);
  }

  async createRun(run: RunRecord, options: CreateRunOptions = {}): Promise<void> {
    const session = this.sessions.get(run.sessionId);
    if (!session || (options.tenant !== undefined && session.record.tenant !== options.tenant))
      throw new HookboxError("NOT_FOUND", `no session ${run.sessionId}: it was deleted before the run could start`, {
        sessionId: run.sessionId,
      });
    const bytes = run.prompt.length + JSON.stringify(run.options).length;
    this.charge(session.record.tenant, bytes, options.maxTenantBytes);
    session.bytes += bytes;
    const state: RunState = {
      record: { ...structuredClone(run), epoch: 1 },
      events: [],
      snapshots: [],
      pauses: new Map(),
      toolResults: new Map(),
    };
    this.runs.set(run.id, state);
    session.runs.push(state);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const state = this.runs.get(runId);
    return state && { ...state.record };
  }

  async listRuns(sessionId: string, page: { offset?: number; limit?: number } = {}): Promise<RunRecord[]> {
    const offset = page.offset ?? 0;
    return this.runsOf(sessionId)
      .slice(offset, page.limit === undefined ? undefined : offset + page.limit)
      .map((state) => ({ ...state.record }));
  }

  async countRuns(sessionId: string): Promise<number> {
    return this.runsOf(sessionId).length;
  }

  async reopenRun(runId: string, options: ReopenOptions): Promise<RunRecord> {
    const run = this.runs.get(runId)?.record;
    if (run?.status !== "interrupted") throw notResumable(runId, run?.status);
    run.status = "running";
    run.ownerPid = options.ownerPid;
    run.ownerInstance = options.ownerInstance;
    run.iterations = options.iterations;
    run.epoch = (run.epoch ?? 0) + 1;
    delete run.reason;
    delete run.errorCode;
    delete run.finishedMs;
    const event = resumedEvent(run, options);
    await this.write({ runId, events: [{ event, json: eventJson(event) }], epoch: run.epoch });
    return { ...run };
  }

  /** Checks the whole write first, then applies it: a refused write changes nothing. */
  async write(write: RunWrite): Promise<RunWriteResult> {
    const state = this.state(write.runId);
    const session = this.sessions.get(state.record.sessionId)!;
    const tenant = session.record.tenant;
    const events = write.events ?? [];
    if (write.epoch !== undefined && write.epoch !== state.record.epoch)
      throw leaseLostError(write.runId, write.epoch, state.record.epoch ?? 0);
    this.checkEvents(state, events);
    let bytes = 0;
    let ledgerBytes = 0;
    for (const { event, json } of events) {
      bytes += json.length;
      ledgerBytes += ledgerRowBytes(usageDelta(event));
    }
    for (const result of write.toolResults ?? []) bytes += result.blockJson.length;
    for (const call of write.hookCalls ?? []) bytes += hookCallWriteBytes(call);
    const snapshot = write.snapshot && this.placeSnapshot(state, session, write.snapshot, events.at(-1)?.event.seq);
    if (snapshot) bytes += snapshot.bytes;
    this.charge(tenant, bytes + ledgerBytes, write.maxTenantBytes);
    session.bytes += bytes;

    for (const { event, json } of events) this.applyEvent(state, tenant, event, json);
    for (const result of write.toolResults ?? []) state.toolResults.set(result.callId, result.blockJson);
    for (const call of write.hookCalls ?? []) this.policy.addHookCall(write.runId, call);
    if (!snapshot || !write.snapshot) return {};
    session.log.push(...snapshot.appended);
    const { pieces: _pieces, headJson, blockBytes, ...position } = write.snapshot;
    const previous = state.snapshots.at(-1)?.layout.headJson;
    state.snapshots.push({
      runId: write.runId,
      ...position,
      layout: { segments: snapshot.segments, headJson: headJson ?? previous!, blockBytes },
    });
    return { snapshot: { index: write.snapshot.index, segments: snapshot.segments } };
  }

  async listEvents(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<HookboxEvent[]> {
    return (await this.listEventTexts(runId, afterSeq, page)).map((row) => withEventJson(JSON.parse(row.json) as HookboxEvent, row.json));
  }

  async listEventTexts(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<StoredEventText[]> {
    const out: StoredEventText[] = [];
    let bytes = 0;
    for (const event of this.runs.get(runId)?.events ?? []) {
      if (event.seq <= afterSeq) continue;
      if (page.limit !== undefined && out.length >= page.limit) break;
      out.push(event);
      bytes += event.json.length;
      if (page.maxBytes !== undefined && bytes >= page.maxBytes) break;
    }
    return out;
  }

  async latestSnapshotInfo(runId: string): Promise<SnapshotInfo | undefined> {
    const snapshot = this.runs.get(runId)?.snapshots.at(-1);
    return snapshot && infoOf(snapshot);
  }

  async listSnapshotInfos(runId: string): Promise<SnapshotInfo[]> {
    return (this.runs.get(runId)?.snapshots ?? []).map(infoOf);
  }

  async readTurn(stored: StoredTurn): Promise<Turn> {
    if ("turnJson" in stored) return JSON.parse(stored.turnJson) as Turn;
    return turnFromParts(stored.layout.headJson, this.blockTexts(stored.layout.segments).map(storedBlock));
  }

  async readTurnText(stored: StoredTurn): Promise<string> {
    if ("turnJson" in stored) return stored.turnJson;
    return turnTextFromParts(stored.layout.headJson, this.blockTexts(stored.layout.segments));
  }

  async sessionHistory(sessionId: string, options: { beforeRunId?: string } = {}): Promise<SessionHistory | undefined> {
    const runs = this.runsOf(sessionId);
    const end = options.beforeRunId ? runs.findIndex((run) => run.record.id === options.beforeRunId) : runs.length;
    for (let i = (end < 0 ? runs.length : end) - 1; i >= 0; i--) {
      const snapshot = runs[i].snapshots.at(-1);
      if (snapshot) return { snapshot: { runId: snapshot.runId, index: snapshot.index }, stored: { layout: snapshot.layout } };
    }
    const base = this.sessions.get(sessionId)?.base;
    return base && { stored: { layout: base } };
  }

  async openPauses(runId: string): Promise<PauseRecord[]> {
    return [...(this.runs.get(runId)?.pauses.values() ?? [])];
  }

  async listTenantPauses(tenant: string): Promise<TenantPauseRecord[]> {
    const pauses: TenantPauseRecord[] = [];
    for (const { record, pauses: open } of this.runs.values()) {
      if (record.status !== "running" || this.sessions.get(record.sessionId)?.record.tenant !== tenant) continue;
      for (const pause of open.values()) pauses.push({ ...structuredClone(pause), sessionId: record.sessionId });
    }
    return pauses.sort((a, b) => a.openedMs - b.openedMs);
  }

  async listTenantRuns(query: TenantRunQuery): Promise<RunRecord[]> {
    // Map order is creation order: the same tie-break as SQLite's rowid.
    const all = [...this.runs.values()]
      .map((state) => state.record)
      .filter((run) => this.sessions.get(run.sessionId)?.record.tenant === query.tenant);
    const latestFirst = all.map((run, index) => ({ run, index })).sort((a, b) => b.run.startedMs - a.run.startedMs || b.index - a.index);
    const before = query.beforeRunId === undefined ? -1 : latestFirst.findIndex(({ run }) => run.id === query.beforeRunId);
    return latestFirst
      .slice(before + 1)
      .map(({ run }) => run)
      .filter(
        (run) =>
          (query.sessionId === undefined || run.sessionId === query.sessionId) &&
          (query.status === undefined || run.status === query.status) &&
          (query.sinceMs === undefined || run.startedMs >= query.sinceMs),
      )
      .slice(0, query.limit)
      .map((run) => structuredClone(run));
  }

  async listToolResults(runId: string): Promise<Map<string, Block>> {
    const results = new Map<string, Block>();
    for (const [callId, json] of this.runs.get(runId)?.toolResults ?? []) results.set(callId, JSON.parse(json) as Block);
    return results;
  }

  async markInterrupted(runId: string, reason: string, options: { epoch?: number } = {}): Promise<void> {
    const run = this.runs.get(runId)?.record;
    if (!run || run.status !== "running") return;
    if (options.epoch !== undefined && run.epoch !== options.epoch) return;
    const event = interruptedEvent(run, reason);
    await this.write({ runId, events: [{ event, json: eventJson(event) }] });
  }

  async usageTotals(tenant: string, sinceMs: number): Promise<UsageTotals> {
    if (sinceMs <= 0) return totalsOf(this.allTime.has(tenant) ? [this.allTime.get(tenant)!] : []);
    return totalsOf(this.ledger.filter((row) => row.tenant === tenant && row.atMs >= sinceMs));
  }

  async runUsage(runId: string): Promise<RunUsage> {
    return runUsageOf(totalsOf(this.ledger.filter((row) => row.runId === runId)));
  }

  async tenantUsage(tenant: string): Promise<TenantUsage> {
    return { storedBytes: this.usage.get(tenant) ?? 0 };
  }

  async storedBytesByTenant(): Promise<Map<string, number>> {
    return new Map(this.usage);
  }

  async close(): Promise<void> {}

  private checkEvents(state: RunState, events: EventWrite[]): void {
    const runId = state.record.id;
    events.forEach(({ event }, i) => {
      if (event.seq !== state.record.lastSeq + 1 + i)
        throw new HookboxError(
          "STORE",
          `event seq ${event.seq} does not follow committed seq ${state.record.lastSeq + i} of run ${runId}`,
          {
            runId,
            seq: event.seq,
          },
        );
    });
  }

  private applyEvent(state: RunState, tenant: string, event: HookboxEvent, json: string): void {
    const run = state.record;
    state.events.push({ seq: event.seq, type: event.type, json });
    const spent = usageDelta(event);
    if (spent) {
      this.ledger.push({ ...spent, tenant, runId: run.id, atMs: event.timestampMs });
      const sum = this.allTime.get(tenant) ?? { ...NO_USAGE };
      for (const key of Object.keys(sum) as (keyof UsageDelta)[]) sum[key] += spent[key];
      this.allTime.set(tenant, sum);
    }
    run.lastSeq = event.seq;
    if (run.inferenceId === "") run.inferenceId = event.inferenceId;
    if (event.type === "inference-finished") run.iterations += 1;
    const pause = pauseChange(event);
    if (pause?.open) {
      const { pending, ...open } = structuredClone(pause.open);
      state.pauses.set(open.pauseId, { ...open, runId: run.id, pendingToolCalls: pending });
    } else if (pause?.close) {
      state.pauses.delete(pause.close.pauseId);
    } else {
      const change = runStatusChange(event);
      if (!change) return;
      state.pauses.clear();
      Object.assign(run, change);
      delete run.ownerPid;
      delete run.ownerInstance;
    }
  }

  /** Where a snapshot's new blocks go in the session's log, and what it adds (nothing is changed yet). */
  private placeSnapshot(state: RunState, session: SessionState, snapshot: SnapshotWrite, seqOfThisWrite: number | undefined) {
    const runId = state.record.id;
    const committedSeq = seqOfThisWrite ?? state.record.lastSeq;
    if (committedSeq !== snapshot.lastSeq)
      throw new HookboxError(
        "STORE",
        `the ${snapshot.phase} snapshot of run ${runId} follows event ${snapshot.lastSeq}, but the run's committed seq is ${committedSeq}`,
        { runId },
      );
    if (snapshot.index <= (state.snapshots.at(-1)?.index ?? 0))
      throw new HookboxError("STORE", `run ${runId} already has snapshot ${snapshot.index}`, { runId });
    if (snapshot.headJson === undefined && state.snapshots.length === 0)
      throw new HookboxError("STORE", `the first snapshot of run ${runId} has no turn head`, { runId });
    const sessionId = session.record.id;
    let next = session.log.length;
    const appended: string[] = [];
    const segments: LogSegment[] = [];
    for (const piece of snapshot.pieces) {
      if ("segment" in piece) pushSegment(segments, piece.segment);
      else {
        pushSegment(segments, { session: sessionId, from: next, to: next + piece.append.length });
        next += piece.append.length;
        appended.push(...piece.append);
      }
    }
    const bytes =
      appended.reduce((sum, text) => sum + text.length, 0) + snapshotRowBytes(encodeSegments(segments, sessionId), snapshot.headJson);
    return { segments, appended, bytes };
  }

  private blockTexts(segments: readonly LogSegment[]): string[] {
    const texts: string[] = [];
    for (const segment of segments) {
      const log = this.sessions.get(segment.session)?.log ?? [];
      if (segment.to > log.length)
        throw new HookboxError("STORE", `the log of session ${segment.session} lacks blocks`, { sessionId: segment.session });
      for (let position = segment.from; position < segment.to; position++) texts.push(log[position]);
    }
    return texts;
  }

  private runsOf(sessionId: string): RunState[] {
    return this.sessions.get(sessionId)?.runs ?? [];
  }

  private charge(tenant: string, bytes: number, maxTenantBytes: number | undefined): void {
    const stored = this.usage.get(tenant) ?? 0;
    if (overQuota(stored, bytes, maxTenantBytes)) throw quotaError(tenant, stored, bytes, maxTenantBytes!);
    this.usage.set(tenant, stored + bytes);
  }

  private state(runId: string): RunState {
    const state = this.runs.get(runId);
    if (!state) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
    return state;
  }
}

function infoOf(snapshot: StoredSnapshot): SnapshotInfo {
  const { layout, ...rest } = snapshot;
  return { ...rest, stored: { layout } };
}
