import type { Block, Turn } from "../turns/turn.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { FinalStatus, HookboxEvent } from "../events/types.js";
import type { SnapshotPhase } from "../loop/handle.js";
import type { RunOptions } from "../host/types.js";
import type { KvStore } from "./kv.js";

/*
 * The durable side of sessions. Every method returns a promise so a networked store (Redis, Postgres)
 * can sit behind the same interface; writes are applied in call order. The SQLite store does each write
 * synchronously inside the call, so a write is committed by the time the call returns.
 */

/** `running` only while a live process owns the run; everything else is final or resumable. */
export type StoredRunStatus = "running" | FinalStatus;

export interface SessionRecord {
  id: string;
  tenant: string;
  /** What a later process needs to rebuild the tenant runtime (see src/session/tenant-record.ts). */
  tenantConfig: JsonObject;
  /** Session defaults that per-run options merge over. */
  defaults: RunOptions;
  createdMs: number;
  /** Set on forked sessions: the conversation the first run continues. */
  forkedFrom?: { sessionId: string; runId: string };
  initialTurn?: Turn;
}

export interface RunRecord {
  id: string;
  sessionId: string;
  /** "" until the run's first event names it (the loop chooses it when the run starts). */
  inferenceId: string;
  prompt: string;
  options: RunOptions;
  status: StoredRunStatus;
  reason?: string;
  errorCode?: string;
  iterations: number;
  startedMs: number;
  finishedMs?: number;
  /** Highest committed event seq (0 before the first event). */
  lastSeq: number;
  /** Process that owns a `running` run; a dead owner means the run was interrupted. */
  ownerPid?: number;
}

export interface SnapshotRecord {
  runId: string;
  /** 1-based order of snapshots within the run. */
  index: number;
  phase: SnapshotPhase;
  turn: Turn;
  /** Event seq committed when the snapshot was taken. */
  lastSeq: number;
  /** Inferences finished when the snapshot was taken (what a resumed run continues counting from). */
  iterations: number;
  createdMs: number;
}

export interface PauseRecord {
  pauseId: string;
  runId: string;
  phase: string;
  deadlineMs: number;
  pendingToolCalls: Json;
  openedMs: number;
}

export interface SessionSummary {
  id: string;
  tenant: string;
  createdMs: number;
  runs: number;
  lastRun?: { id: string; status: StoredRunStatus; prompt: string; startedMs: number };
}

export interface Store {
  /** Where the data lives (a file path, or `:memory:`); named in every error. */
  readonly location: string;

  createSession(session: SessionRecord): Promise<void>;
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  listSessions(filter?: { tenant?: string }): Promise<SessionSummary[]>;

  createRun(run: RunRecord): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Runs of a session, oldest first. */
  listRuns(sessionId: string): Promise<RunRecord[]>;
  /** Marks a run live again (resume): status `running`, owned by this process, iterations as of the snapshot. */
  reopenRun(runId: string, options: { ownerPid: number; iterations: number }): Promise<void>;

  /**
   * Appends one event (seq must be lastSeq + 1). Keeps derived state in the same transaction:
   * `debugger.pause` opens a pause, `debugger.continue` closes it, `run-finished` sets the run's final status.
   */
  appendEvent(runId: string, event: HookboxEvent): Promise<void>;
  /** Events with seq > afterSeq, in order. */
  listEvents(runId: string, afterSeq?: number): Promise<HookboxEvent[]>;

  /** Commits a phase snapshot; lastSeq and iterations are taken from the run as committed so far. */
  saveSnapshot(runId: string, phase: SnapshotPhase, turn: Turn): Promise<SnapshotRecord>;
  latestSnapshot(runId: string): Promise<SnapshotRecord | undefined>;
  listSnapshots(runId: string): Promise<SnapshotRecord[]>;

  openPauses(runId: string): Promise<PauseRecord[]>;

  /** The tool-result journal: a committed result is never executed again on resume. */
  recordToolResult(runId: string, callId: string, toolUse: Block): Promise<void>;
  listToolResults(runId: string): Promise<Map<string, Block>>;

  /**
   * Ends a run that can no longer go on in this process: status `interrupted`, open pauses closed,
   * and a final `run-finished {status:"interrupted"}` event so stream readers know to stop.
   */
  markInterrupted(runId: string, reason: string): Promise<void>;

  /** The per-tenant key-value store behind ctx.kv (src/store/kv.ts). */
  readonly kv: KvStore;

  close(): Promise<void>;
}
