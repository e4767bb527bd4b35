import type { Block, Turn } from "../turns/turn.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { FinalStatus, HookboxEvent } from "../events/types.js";
import type { SnapshotPhase, RunOptions } from "../host/types.js";
import type { WriteOptions } from "./quota.js";
import type { KvStore } from "./kv.js";
import type { RunUsage } from "../host/usage.js";
import type { UsageTotals } from "./usage.js";
import type { PolicyStore, RunDeployment, RunFilter } from "./policy-types.js";

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
  /** That process's instance (process-alive.ts): tells a live owner from a later process that got its pid. */
  ownerInstance?: string;
  /** The deployment (script versions) the run started with; its resume uses the same. */
  deployment?: RunDeployment;
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

/** A stored event as its JSON text, for readers that pass it on (SSE) without parsing it. */
export interface StoredEventText {
  seq: number;
  type: string;
  json: string;
}

export type StoredSnapshotText = Omit<SnapshotRecord, "turn"> & { turnJson: string };

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

export type { WriteOptions };

/** A bounded read: at most `limit` items, and stop after the item that reaches `maxBytes` (at least one item). */
export interface PageOptions {
  limit?: number;
  maxBytes?: number;
}

/** What a tenant keeps in the store, in bytes of stored JSON text (sessions, runs, events, snapshots, tool results). */
export interface TenantUsage {
  storedBytes: number;
}

/** Searching runs across sessions (replay, the shadow report); a store's policy tables answer it. */
export interface RunSearch {
  /** Runs matching every given filter, oldest first, with their session's tenant. */
  findRuns(filter: RunFilter): Promise<(RunRecord & { tenant: string })[]>;
}

export interface Store extends PolicyStore, RunSearch {
  /** Where the data lives (a file path, or `:memory:`); named in every error. */
  readonly location: string;

  createSession(session: SessionRecord, options?: WriteOptions): Promise<void>;
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  listSessions(filter?: { tenant?: string }): Promise<SessionSummary[]>;

  createRun(run: RunRecord, options?: WriteOptions): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Runs of a session, oldest first; `page` skips `offset` runs and returns at most `limit`. */
  listRuns(sessionId: string, page?: { offset?: number; limit?: number }): Promise<RunRecord[]>;
  countRuns(sessionId: string): Promise<number>;
  /** Marks a run live again (resume): status `running`, owned by this process, iterations as of the snapshot. */
  reopenRun(runId: string, options: { ownerPid: number; ownerInstance: string; iterations: number }): Promise<void>;

  /**
   * Appends one event (seq must be lastSeq + 1). Keeps derived state in the same transaction:
   * `debugger.pause` opens a pause, `debugger.continue` closes it, `run-finished` sets the run's final status.
   */
  appendEvent(runId: string, event: HookboxEvent, options?: WriteOptions): Promise<void>;
  /** Events with seq > afterSeq, in order; one bounded page of them with `page` (read a big run page by page). */
  listEvents(runId: string, afterSeq?: number, page?: PageOptions): Promise<HookboxEvent[]>;
  /** The same page as stored JSON text. */
  listEventTexts(runId: string, afterSeq?: number, page?: PageOptions): Promise<StoredEventText[]>;

  /** Commits a phase snapshot; lastSeq and iterations are taken from the run as committed so far. */
  saveSnapshot(runId: string, phase: SnapshotPhase, turn: Turn, options?: WriteOptions): Promise<SnapshotRecord>;
  latestSnapshot(runId: string): Promise<SnapshotRecord | undefined>;
  /** The latest snapshot with its turn as the stored JSON text: a big turn is passed on without parsing it. */
  latestSnapshotText(runId: string): Promise<StoredSnapshotText | undefined>;
  listSnapshots(runId: string): Promise<SnapshotRecord[]>;

  openPauses(runId: string): Promise<PauseRecord[]>;

  /** The tool-result journal: a committed result is never executed again on resume. */
  recordToolResult(runId: string, callId: string, toolUse: Block, options?: WriteOptions): Promise<void>;
  listToolResults(runId: string): Promise<Map<string, Block>>;

  /**
   * Ends a run that can no longer go on in this process: status `interrupted`, open pauses closed,
   * and a final `run-finished {status:"interrupted"}` event so stream readers know to stop.
   */
  markInterrupted(runId: string, reason: string): Promise<void>;

  /** A tenant's usage since a time (epoch ms): runs, inferences, tokens, cost, tool calls, sandbox CPU (src/store/usage.ts). */
  usageTotals(tenant: string, sinceMs: number): Promise<UsageTotals>;
  /** One run's tokens and cost as its stored events recorded them. */
  runUsage(runId: string): Promise<RunUsage>;
  tenantUsage(tenant: string): Promise<TenantUsage>;
  /** The per-tenant key-value store behind ctx.kv (src/store/kv.ts). */
  readonly kv: KvStore;

  close(): Promise<void>;
}
