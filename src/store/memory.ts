import type { Block, Turn } from "../turns/turn.js";
import type { HookboxEvent } from "../events/types.js";
import type { SnapshotPhase } from "../host/types.js";
import { HookboxError } from "../errors.js";
import { interruptedEvent } from "./interrupted.js";
import { runUsageOf, totalsOf, usageDelta, type UsageDelta, type UsageTotals } from "./usage.js";
import type { RunUsage } from "../host/usage.js";
import { MemoryPolicyTables } from "./memory-policy.js";
import { WithPolicyTables } from "./with-policy-tables.js";
import { pauseChange } from "./pause-events.js";
import { MemoryKv } from "./memory-kv.js";
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
import { overQuota, quotaError } from "./quota.js";
import { ledgerRowBytes } from "./row-bytes.js";

interface RunState {
  record: RunRecord;
  events: HookboxEvent[];
  snapshots: SnapshotRecord[];
  pauses: Map<string, PauseRecord>;
  toolResults: Map<string, Block>;
}

/**
 * The same contract as the SQLite store, kept in this process only (nothing survives it). For library
 * use without a file and as the baseline the bench compares the SQLite store against.
 */
export class MemoryStore extends WithPolicyTables implements Store {
  readonly location = ":memory:";
  readonly kv = new MemoryKv();
  private readonly sessions = new Map<string, SessionRecord>();
  private readonly runs = new Map<string, RunState>();
  private readonly ledger: (UsageDelta & { tenant: string; runId: string; atMs: number })[] = [];
  /** Bytes of JSON text per tenant, counted as the SQLite store counts what it writes. */
  private readonly usage = new Map<string, number>();
  protected readonly policy = new MemoryPolicyTables({
    runs: () => [...this.runs.values()].map((state) => state.record),
    session: (id) => this.sessions.get(id),
    charge: (tenant, bytes, options) => this.charge(tenant, bytes, options),
    chargeRun: (runId, bytes, options) => this.chargeRun(runId, bytes, options),
  });

  async createSession(session: SessionRecord, options?: WriteOptions): Promise<void> {
    if (this.sessions.has(session.id)) throw new HookboxError("STORE", `session ${session.id} already exists`, { sessionId: session.id });
    const bytes =
      jsonLength(session.tenantConfig) + jsonLength(session.defaults) + (session.initialTurn ? jsonLength(session.initialTurn) : 0);
    this.charge(session.tenant, bytes, options);
    this.sessions.set(session.id, structuredClone(session));
  }

  async getSession(sessionId: string): Promise<SessionRecord | undefined> {
    const session = this.sessions.get(sessionId);
    return session && structuredClone(session);
  }

  async listSessions(filter: { tenant?: string } = {}): Promise<SessionSummary[]> {
    const out: SessionSummary[] = [];
    for (const session of this.sessions.values()) {
      if (filter.tenant !== undefined && session.tenant !== filter.tenant) continue;
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

  async createRun(run: RunRecord, options?: WriteOptions): Promise<void> {
    const session = this.sessions.get(run.sessionId);
    if (!session) throw new HookboxError("STORE", `unknown session ${run.sessionId}`, { sessionId: run.sessionId });
    this.charge(session.tenant, run.prompt.length + jsonLength(run.options), options);
    this.runs.set(run.id, { record: structuredClone(run), events: [], snapshots: [], pauses: new Map(), toolResults: new Map() });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const state = this.runs.get(runId);
    return state && { ...state.record };
  }

  async listRuns(sessionId: string, page: { offset?: number; limit?: number } = {}): Promise<RunRecord[]> {
    const offset = page.offset ?? 0;
    return [...this.runs.values()]
      .filter((state) => state.record.sessionId === sessionId)
      .slice(offset, page.limit === undefined ? undefined : offset + page.limit)
      .map((state) => ({ ...state.record }));
  }

  async countRuns(sessionId: string): Promise<number> {
    return [...this.runs.values()].filter((state) => state.record.sessionId === sessionId).length;
  }

  async reopenRun(runId: string, options: { ownerPid: number; ownerInstance: string; iterations: number }): Promise<void> {
    const run = this.state(runId).record;
    run.status = "running";
    run.ownerPid = options.ownerPid;
    run.ownerInstance = options.ownerInstance;
    run.iterations = options.iterations;
    delete run.reason;
    delete run.errorCode;
    delete run.finishedMs;
  }

  async appendEvent(runId: string, event: HookboxEvent, options?: WriteOptions): Promise<void> {
    const state = this.state(runId);
    const run = state.record;
    if (event.seq !== run.lastSeq + 1) {
      throw new HookboxError("STORE", `event seq ${event.seq} does not follow committed seq ${run.lastSeq} of run ${runId}`, {
        runId,
        seq: event.seq,
      });
    }
    const spent = usageDelta(event);
    this.chargeRun(runId, jsonLength(event) + ledgerRowBytes(spent), options);
    state.events.push(structuredClone(event));
    const tenant = this.sessions.get(run.sessionId)?.tenant;
    if (spent && tenant !== undefined) this.ledger.push({ ...spent, tenant, runId, atMs: event.timestampMs });
    run.lastSeq = event.seq;
    if (run.inferenceId === "") run.inferenceId = event.inferenceId;
    if (event.type === "inference-finished") run.iterations += 1;
    const pause = pauseChange(event);
    if (pause?.open) {
      const { pending, ...open } = structuredClone(pause.open);
      state.pauses.set(open.pauseId, { ...open, runId, pendingToolCalls: pending });
    } else if (pause?.close) {
      state.pauses.delete(pause.close.pauseId);
    } else if (event.type === "run-finished") {
      state.pauses.clear();
      Object.assign(run, { status: event.status, iterations: event.iterations, finishedMs: event.timestampMs });
      if (event.reason !== undefined) run.reason = event.reason;
      if (event.errorCode !== undefined) run.errorCode = event.errorCode;
      delete run.ownerPid;
      delete run.ownerInstance;
    }
  }

  async listEvents(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<HookboxEvent[]> {
    const out: HookboxEvent[] = [];
    let bytes = 0;
    for (const event of this.runs.get(runId)?.events ?? []) {
      if (event.seq <= afterSeq) continue;
      if (page.limit !== undefined && out.length >= page.limit) break;
      out.push(event);
      if (page.maxBytes === undefined) continue;
      bytes += jsonLength(event);
      if (bytes >= page.maxBytes) break;
    }
    return out;
  }

  async listEventTexts(runId: string, afterSeq = 0, page: PageOptions = {}): Promise<StoredEventText[]> {
    return (await this.listEvents(runId, afterSeq, page)).map((event) => ({
      seq: event.seq,
      type: event.type,
      json: JSON.stringify(event),
    }));
  }

  async saveSnapshot(runId: string, phase: SnapshotPhase, turn: Turn, options?: WriteOptions): Promise<SnapshotRecord> {
    const state = this.state(runId);
    this.chargeRun(runId, jsonLength(turn), options);
    const snapshot: SnapshotRecord = {
      runId,
      index: state.snapshots.length + 1,
      phase,
      turn: structuredClone(turn),
      lastSeq: state.record.lastSeq,
      iterations: state.record.iterations,
      createdMs: Date.now(),
    };
    state.snapshots.push(snapshot);
    return snapshot;
  }

  async latestSnapshotText(runId: string): Promise<StoredSnapshotText | undefined> {
    const snapshot = this.runs.get(runId)?.snapshots.at(-1);
    if (!snapshot) return undefined;
    const { turn, ...rest } = snapshot;
    return { ...rest, turnJson: JSON.stringify(turn) };
  }

  async latestSnapshot(runId: string): Promise<SnapshotRecord | undefined> {
    return this.runs.get(runId)?.snapshots.at(-1);
  }

  async listSnapshots(runId: string): Promise<SnapshotRecord[]> {
    return [...(this.runs.get(runId)?.snapshots ?? [])];
  }

  async openPauses(runId: string): Promise<PauseRecord[]> {
    return [...(this.runs.get(runId)?.pauses.values() ?? [])];
  }

  async recordToolResult(runId: string, callId: string, toolUse: Block, options?: WriteOptions): Promise<void> {
    const state = this.state(runId);
    this.chargeRun(runId, jsonLength(toolUse), options);
    state.toolResults.set(callId, structuredClone(toolUse));
  }

  async listToolResults(runId: string): Promise<Map<string, Block>> {
    return new Map(this.runs.get(runId)?.toolResults ?? []);
  }

  async markInterrupted(runId: string, reason: string): Promise<void> {
    const run = this.runs.get(runId)?.record;
    if (!run || run.status !== "running") return;
    await this.appendEvent(runId, interruptedEvent(run, reason));
  }

  async usageTotals(tenant: string, sinceMs: number): Promise<UsageTotals> {
    return totalsOf(this.ledger.filter((row) => row.tenant === tenant && row.atMs >= sinceMs));
  }

  async runUsage(runId: string): Promise<RunUsage> {
    return runUsageOf(totalsOf(this.ledger.filter((row) => row.runId === runId)));
  }

  async tenantUsage(tenant: string): Promise<TenantUsage> {
    return { storedBytes: this.usage.get(tenant) ?? 0 };
  }

  async close(): Promise<void> {}

  private charge(tenant: string, bytes: number, options: WriteOptions = {}): void {
    const stored = this.usage.get(tenant) ?? 0;
    if (overQuota(stored, bytes, options.maxTenantBytes)) throw quotaError(tenant, stored, bytes, options.maxTenantBytes!);
    this.usage.set(tenant, stored + bytes);
  }

  private chargeRun(runId: string, bytes: number, options?: WriteOptions): void {
    const tenant = this.sessions.get(this.state(runId).record.sessionId)?.tenant ?? "";
    this.charge(tenant, bytes, options);
  }

  private state(runId: string): RunState {
    const state = this.runs.get(runId);
    if (!state) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
    return state;
  }
}

function jsonLength(value: unknown): number {
  return JSON.stringify(value).length;
}
