import type { Block, Turn } from "../turns/turn.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { HookboxEvent } from "../events/types.js";
import type { SnapshotPhase, RunOptions } from "../host/types.js";
import type { WriteOptions } from "./quota.js";
import type { KvStore } from "./kv.js";
import type { RunUsage } from "../host/usage.js";
import type { UsageTotals } from "./usage.js";
import type { PolicyStore, RunFilter } from "./policy-types.js";
import type { LogSegment, TurnLayout, TurnPiece } from "./turn-layout.js";

import type { ClusterStore } from "./cluster.js";
import type { RunRecord, StoredRunStatus } from "./run-record.js";

export type { RunRecord, StoredRunStatus } from "./run-record.js";

export type { LogSegment, TurnLayout, TurnPiece } from "./turn-layout.js";

/** What `Store.reopenRun` makes of a resumed run's ownership. */
export interface ReopenOptions {
  ownerPid: number;
  ownerInstance: string;
  /** Inferences finished as of the snapshot the run resumes from. */
  iterations: number;
  /** The cluster node that resumes it (named in `run-resumed`). */
  node?: string;
}

/*
 * The durable side of sessions. Every method returns a promise so a networked store (PostgreSQL) can sit
 * behind the same interface; writes are applied in call order, and a read sees every write issued before
 * it. A session's history is an append-only log of blocks; a snapshot records where its turn's blocks are
 * in that log (src/store/turn-layout.ts), never a copy of them. docs/server.md has the schema.
 */

export interface SessionRecord {
  id: string;
  tenant: string;
  /** What a later process needs to rebuild the tenant runtime (see src/session/tenant-record.ts). */
  tenantConfig: JsonObject;
  /** Session defaults that per-run options merge over. */
  defaults: RunOptions;
  createdMs: number;
  /** Set on forked sessions: the run whose conversation the first run continues. */
  forkedFrom?: { sessionId: string; runId: string };
  /**
   * Given at creation only: the turn the session's first run continues, as blocks already in the store's logs
   * (a fork: its source run's latest snapshot, nothing copied) or as a whole turn (its blocks become the
   * first entries of the session's log). Read it back with `Store.sessionHistory`.
   */
  base?: TurnLayout;
  initialTurn?: Turn;
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

/** A stored turn without its blocks read: its layout, or the whole turn's JSON text (snapshots before schema 7). */
export type StoredTurn = { layout: TurnLayout } | { turnJson: string };

/** A snapshot as stored, its blocks not read. */
export type SnapshotInfo = Omit<SnapshotRecord, "turn"> & { stored: StoredTurn };

export interface SessionHistoryOptions {
  /** Only the runs before this one. */
  beforeRunId?: string;
  /**
   * The caller knows that no write of this process that can change the session's history is still queued (a run
   * start holding the session's claim: every earlier run of the session here has committed its final write). A
   * store that commits its queued writes before a read (SQLite's group commit) then reads without committing them:
   * what is queued is other sessions' (writes of other processes are committed in those processes either way).
   */
  sessionWritesCommitted?: boolean;
}

/** The turn a session's next run continues (`Store.sessionHistory`) and where it comes from. */
export interface SessionHistory {
  /** The snapshot it is (a run's latest), or absent for the session's starting turn (a fork's). */
  snapshot?: { runId: string; index: number };
  stored: StoredTurn;
}

/** An event with its JSON text, made once (src/events/event-json.ts). */
export interface EventWrite {
  event: HookboxEvent;
  json: string;
}

/** A hook chain record with its JSON texts. */
export interface HookCallWrite {
  callId: string;
  hook: string;
  attempt: number;
  shadow: boolean;
  verdict: string;
  decisionJson: string;
  payloadJson?: string;
}

/** A phase snapshot: the turn's layout (blocks new to the log as text) and the run's own position. */
export interface SnapshotWrite {
  phase: SnapshotPhase;
  /** 1-based order within the run (the writer counts on from the snapshot it started from). */
  index: number;
  pieces: TurnPiece[];
  /** The turn without its blocks; absent when it is the same as in the run's previous snapshot. */
  headJson?: string;
  blockBytes: number;
  /** The event seq committed before it (the write is refused if the run's is not this), and inferences finished. */
  lastSeq: number;
  iterations: number;
  createdMs: number;
}

/**
 * Writes of one run that are kept or refused together. The store applies the writes that arrive together
 * (from any run) in one transaction, each write on its own: one refused does not undo another.
 */
export interface RunWrite {
  runId: string;
  /** The run's session and tenant, when the writer knows them (else the store looks them up). */
  sessionId?: string;
  tenant?: string;
  /** Consecutive events, the first following the run's committed seq. */
  events?: EventWrite[];
  toolResults?: { callId: string; blockJson: string }[];
  hookCalls?: HookCallWrite[];
  snapshot?: SnapshotWrite;
  /** The tenant's store quota: over it the whole write is refused with STORE_QUOTA. */
  maxTenantBytes?: number;
  /**
   * The epoch of the writer's ownership (its lease's fencing token): the write is refused whole with LEASE_LOST
   * once the run has a later epoch (another owner resumed or took it over), in the same transaction.
   */
  epoch?: number;
}

export interface RunWriteResult {
  /** Where the snapshot's blocks are, new ones placed in the session's log. */
  snapshot?: { index: number; segments: LogSegment[] };
}

export interface PauseRecord {
  pauseId: string;
  runId: string;
  phase: string;
  deadlineMs: number;
  pendingToolCalls: Json;
  openedMs: number;
}

/** An open pause of a tenant's run, with the run's session (the approvals inbox). */
export type TenantPauseRecord = PauseRecord & { sessionId: string };

/** Which of a tenant's runs to list (`Store.listTenantRuns`): every given filter holds. */
export interface TenantRunQuery {
  tenant: string;
  sessionId?: string;
  status?: StoredRunStatus;
  /** Runs started at or after this time (epoch ms). */
  sinceMs?: number;
  /** Runs started before this run (the previous page's last run id). */
  beforeRunId?: string;
  limit: number;
}

/** What deleting a session freed (`Store.deleteSession`). */
export interface DeletedSession {
  sessionId: string;
  tenant: string;
  /** Bytes taken off the tenant's stored bytes (its store quota). */
  freedBytes: number;
}

export interface SessionFilter {
  tenant?: string;
  /** Sessions after this one in the listing's order. */
  after?: { createdMs: number; id: string };
  limit?: number;
}

export interface SessionSummary {
  id: string;
  tenant: string;
  createdMs: number;
  runs: number;
  lastRun?: { id: string; status: StoredRunStatus; prompt: string; startedMs: number };
}

export type { WriteOptions };

export interface CreateRunOptions extends WriteOptions {
  /** The tenant the caller's session record names: a session of another tenant under the run's session id is NOT_FOUND. */
  tenant?: string;
}

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
  /** Sessions in creation order (then id); `after` and `limit` page through them. */
  listSessions(filter?: SessionFilter): Promise<SessionSummary[]>;
  /**
   * Deletes a session with its runs, events, snapshots, log, tool results, hook chain records and pauses, and takes
   * their bytes off the tenant's stored bytes; the usage ledger stays. Throws NOT_FOUND, SESSION_BUSY (a run of it
   * is running) or SESSION_FORKED (a fork keeps its history in this session's log).
   */
  deleteSession(sessionId: string): Promise<DeletedSession>;
  /** Up to `limit` of a tenant's sessions whose latest run started (or, without runs, that were created) before `beforeMs`, newest first. */
  staleSessions(tenant: string, beforeMs: number, limit: number): Promise<string[]>;

  /**
   * Records a run of an existing session (NOT_FOUND when the session is gone, or, with `options.tenant`, when the
   * session under that id is another tenant's: a caller starting from a record it remembers is checked here).
   */
  createRun(run: RunRecord, options?: CreateRunOptions): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Runs of a session, oldest first; `page` skips `offset` runs and returns at most `limit`. */
  listRuns(sessionId: string, page?: { offset?: number; limit?: number }): Promise<RunRecord[]>;
  countRuns(sessionId: string): Promise<number>;
  /**
   * Makes an interrupted run live again (resume), owned by this process, with its next epoch and iterations as of
   * its snapshot, and appends `run-resumed {node?}`: one transaction. A cluster store also takes over a `running`
   * run whose lease has expired (appending its `run-interrupted` first). Refused with NOT_RESUMABLE otherwise.
   * Returns the run as reopened (its new epoch and last seq).
   */
  reopenRun(runId: string, options: ReopenOptions): Promise<RunRecord>;

  /**
   * Commits writes of one run (events, a snapshot, journal entries, hook chain records) together; writes
   * issued in the same turn of the event loop share one transaction. Events keep derived state with them:
   * `debugger.pause` / `approval.requested` open a pause, `debugger.continue` / `approval.resolved` close it,
   * `run-finished` sets the run's final status, usage-bearing events add ledger rows. Refused (nothing kept)
   * when an event's seq does not follow the run's, a snapshot's `lastSeq` is not the run's, or the quota is passed.
   */
  write(write: RunWrite): Promise<RunWriteResult>;
  /** One event (seq must be lastSeq + 1): `write` with that event. */
  appendEvent(runId: string, event: HookboxEvent, options?: WriteOptions): Promise<void>;
  /** Events with seq > afterSeq, in order; one bounded page of them with `page` (read a big run page by page). */
  listEvents(runId: string, afterSeq?: number, page?: PageOptions): Promise<HookboxEvent[]>;
  /** The same page as stored JSON text. */
  listEventTexts(runId: string, afterSeq?: number, page?: PageOptions): Promise<StoredEventText[]>;

  /**
   * Commits a phase snapshot of a whole turn, comparing it with the run's latest snapshot to add only its new
   * blocks (a convenience: a run's writer keeps that comparison in memory and calls `write`); lastSeq and
   * iterations are the run's as committed so far.
   */
  saveSnapshot(runId: string, phase: SnapshotPhase, turn: Turn, options?: WriteOptions): Promise<SnapshotRecord>;
  /** The run's latest snapshot without reading its blocks. */
  latestSnapshotInfo(runId: string): Promise<SnapshotInfo | undefined>;
  listSnapshotInfos(runId: string): Promise<SnapshotInfo[]>;
  /** A stored turn with its blocks, read from the logs (frozen blocks: src/turns/block-json.ts). */
  readTurn(stored: StoredTurn): Promise<Turn>;
  /** The same turn as JSON text, assembled from the stored texts without parsing them. */
  readTurnText(stored: StoredTurn): Promise<string>;
  /**
   * The turn a new run of the session continues: the latest snapshot of its latest run that has one (of the
   * runs before `beforeRunId`, when given), else the session's starting turn. Blocks not read.
   */
  sessionHistory(sessionId: string, options?: SessionHistoryOptions): Promise<SessionHistory | undefined>;
  latestSnapshot(runId: string): Promise<SnapshotRecord | undefined>;
  /** The latest snapshot with its turn as JSON text: a big turn is passed on without parsing it. */
  latestSnapshotText(runId: string): Promise<StoredSnapshotText | undefined>;
  listSnapshots(runId: string): Promise<SnapshotRecord[]>;

  openPauses(runId: string): Promise<PauseRecord[]>;
  /** The open pauses of a tenant's running runs (approvals and step pauses), oldest first. */
  listTenantPauses(tenant: string): Promise<TenantPauseRecord[]>;
  /** A tenant's runs, latest first (by start, then creation order), at most `limit`. */
  listTenantRuns(query: TenantRunQuery): Promise<RunRecord[]>;

  /** The tool-result journal: a committed result is never executed again on resume. */
  recordToolResult(runId: string, callId: string, toolUse: Block, options?: WriteOptions): Promise<void>;
  listToolResults(runId: string): Promise<Map<string, Block>>;

  /**
   * Cuts off a run that can no longer go on in this process: status `interrupted`, open pauses closed, and a
   * `run-interrupted {reason}` event (readers that are not waiting for a resume stop there). A run that is not
   * `running` is left alone; with `epoch`, so is a run another owner holds now.
   */
  markInterrupted(runId: string, reason: string, options?: { epoch?: number }): Promise<void>;

  /** A tenant's usage since a time (epoch ms): runs, inferences, tokens, cost, tool calls, sandbox CPU (src/store/usage.ts). */
  usageTotals(tenant: string, sinceMs: number): Promise<UsageTotals>;
  /** One run's tokens and cost as its stored events recorded them. */
  runUsage(runId: string): Promise<RunUsage>;
  tenantUsage(tenant: string): Promise<TenantUsage>;
  /**
   * Every tenant's stored bytes, read from the per-tenant counters (one row per tenant, kept in the writes' own
   * transactions): what a /metrics scrape reads, at a cost that grows with the tenants, never with what they store.
   */
  storedBytesByTenant(): Promise<Map<string, number>>;
  /** The per-tenant key-value store behind ctx.kv (src/store/kv.ts). */
  readonly kv: KvStore;
  /**
   * Present on a store that many processes on many machines share (PostgreSQL): run leases and their takeover,
   * control messages to a run's owner, event notifications, cluster-wide rate limits, health (src/store/cluster.ts).
   */
  readonly cluster?: ClusterStore;

  close(): Promise<void>;
}
