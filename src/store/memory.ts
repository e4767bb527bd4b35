import type { Block, Turn } from "../turns/turn.js";
import type { HookboxEvent } from "../events/types.js";
import type { SnapshotPhase } from "../loop/handle.js";
import { HookboxError } from "../errors.js";
import { interruptedEvent } from "./interrupted.js";
import { pauseChange } from "./pause-events.js";
import { MemoryKv } from "./memory-kv.js";
import type { PauseRecord, RunRecord, SessionRecord, SessionSummary, SnapshotRecord, Store } from "./types.js";

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
export class MemoryStore implements Store {
  readonly location = ":memory:";
  readonly kv = new MemoryKv();
  private readonly sessions = new Map<string, SessionRecord>();
  private readonly runs = new Map<string, RunState>();

  async createSession(session: SessionRecord): Promise<void> {
    if (this.sessions.has(session.id)) throw new HookboxError("STORE", `session ${session.id} already exists`, { sessionId: session.id });
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

  async createRun(run: RunRecord): Promise<void> {
    if (!this.sessions.has(run.sessionId))
      throw new HookboxError("STORE", `unknown session ${run.sessionId}`, { sessionId: run.sessionId });
    this.runs.set(run.id, { record: structuredClone(run), events: [], snapshots: [], pauses: new Map(), toolResults: new Map() });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const state = this.runs.get(runId);
    return state && { ...state.record };
  }

  async listRuns(sessionId: string): Promise<RunRecord[]> {
    return [...this.runs.values()].filter((state) => state.record.sessionId === sessionId).map((state) => ({ ...state.record }));
  }

  async reopenRun(runId: string, options: { ownerPid: number; iterations: number }): Promise<void> {
    const run = this.state(runId).record;
    run.status = "running";
    run.ownerPid = options.ownerPid;
    run.iterations = options.iterations;
    delete run.reason;
    delete run.errorCode;
    delete run.finishedMs;
  }

  async appendEvent(runId: string, event: HookboxEvent): Promise<void> {
    const state = this.state(runId);
    const run = state.record;
    if (event.seq !== run.lastSeq + 1) {
      throw new HookboxError("STORE", `event seq ${event.seq} does not follow committed seq ${run.lastSeq} of run ${runId}`, {
        runId,
        seq: event.seq,
      });
    }
    state.events.push(structuredClone(event));
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
    }
  }

  async listEvents(runId: string, afterSeq = 0): Promise<HookboxEvent[]> {
    return (this.runs.get(runId)?.events ?? []).filter((event) => event.seq > afterSeq);
  }

  async saveSnapshot(runId: string, phase: SnapshotPhase, turn: Turn): Promise<SnapshotRecord> {
    const state = this.state(runId);
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

  async latestSnapshot(runId: string): Promise<SnapshotRecord | undefined> {
    return this.runs.get(runId)?.snapshots.at(-1);
  }

  async listSnapshots(runId: string): Promise<SnapshotRecord[]> {
    return [...(this.runs.get(runId)?.snapshots ?? [])];
  }

  async openPauses(runId: string): Promise<PauseRecord[]> {
    return [...(this.runs.get(runId)?.pauses.values() ?? [])];
  }

  async recordToolResult(runId: string, callId: string, toolUse: Block): Promise<void> {
    this.state(runId).toolResults.set(callId, structuredClone(toolUse));
  }

  async listToolResults(runId: string): Promise<Map<string, Block>> {
    return new Map(this.runs.get(runId)?.toolResults ?? []);
  }

  async markInterrupted(runId: string, reason: string): Promise<void> {
    const run = this.runs.get(runId)?.record;
    if (!run || run.status !== "running") return;
    await this.appendEvent(runId, interruptedEvent(run, reason));
  }

  async close(): Promise<void> {}

  private state(runId: string): RunState {
    const state = this.runs.get(runId);
    if (!state) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
    return state;
  }
}
