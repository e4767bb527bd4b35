/**
 * Sessions over a Store: start, resume, fork and read runs; one active run per session.
 *
 * How the CLI uses it (`hookbox run --store FILE [--session ID]`):
 *
 *   const store = openStore(file);                                   // src/store/index.ts; throws STORE naming the file
 *   const manager = new SessionManager({ store, runtimeFor: async () => runtime });
 *   const session = (sessionId && (await manager.get(sessionId)))
 *     ?? (await manager.create({ tenant: config.name, tenantConfig: config, sessionId }));
 *   const handle = await session.run(prompt, options);               // SESSION_BUSY if a run is active
 *   for await (const event of handle.events()) print(event);         // or manager.events(handle.runId)
 *   const result = await handle.wait();
 *   await manager.close(); await store.close();
 *
 * `hookbox resume --store FILE --session ID`: `runtimeFor: (tenant, record) => createTenantRuntime(
 * restoreTenantConfig(record.tenantConfig, overrideFromConfig), pool)`, then `await manager.resume(ID)`.
 * Events of a resumed run continue the stored seq; `manager.events(runId, afterSeq)` reads stored + live ones.
 */
import { performance } from "node:perf_hooks";
import { HookboxError } from "../errors.js";
import { newId } from "../loop/ids.js";
import type { HookboxEvent } from "../events/types.js";
import type { RunHandle, RunOptions, TenantRuntime } from "../host/types.js";
import type { Block, Turn } from "../turns/turn.js";
import type { DeletedSession, RunRecord, SessionFilter, SessionRecord, SnapshotInfo, Store, StoredEventText } from "../store/types.js";
import { mergeRunOptions } from "../host/run-defaults.js";
import { recordTenantConfig } from "./tenant-record.js";
import { LiveRuns, type LaunchOptions } from "./live-runs.js";
import { readRunEventTextBatches, readRunEvents, readRunEventTexts, type EventReaderOptions, type LiveDeltaText } from "./read-events.js";
import { thisProcessInstance } from "../store/process-alive.js";
import { Session, type CreateSessionOptions } from "./session.js";
import { describeSession, sessionStatus, sessionViewJson, type SessionListing, type SessionView } from "./describe.js";
import { KnownSessions } from "./known-sessions.js";
import { DEFAULT_HISTORY_CACHE, ownCopy, SessionHistories, type HistoryCacheLimits, type StartingTurn } from "./histories.js";

export type { SessionListing, SessionStatus, SessionView } from "./describe.js";

export interface SessionManagerOptions {
  store: Store;
  /**
   * The runtime that runs this session's tenant (built once per tenant by the server; from the record by resume).
   * `run` is given when resuming: its recorded deployment names the script versions it must go on with.
   */
  runtimeFor(tenant: string, session: SessionRecord, run?: RunRecord): Promise<TenantRuntime>;
  /** The tenant's store quota in bytes (none: unlimited); sessions, runs and every run write respect it. */
  storeQuota?(tenant: string): number | undefined;
  /** Sees every event of every run this process runs (the server's metrics). */
  onEvent?(tenant: string, runId: string, event: HookboxEvent): void;
  /** How many sessions' latest turns this process keeps to start their next runs from (src/session/histories.ts). */
  historyCache?: HistoryCacheLimits;
}

// A SessionOwner (session.ts) by shape, checked where it hands itself to each Session: naming that internal
// interface here would put it in the published declarations.
export class SessionManager {
  readonly store: Store;
  private readonly runtimeFor: SessionManagerOptions["runtimeFor"];
  private readonly runs: LiveRuns;
  private readonly storeQuota: (tenant: string) => number | undefined;
  private readonly histories: SessionHistories;
  private readonly known = new KnownSessions();

  constructor(options: SessionManagerOptions) {
    this.store = options.store;
    this.runtimeFor = options.runtimeFor;
    this.storeQuota = options.storeQuota ?? (() => undefined);
    this.runs = new LiveRuns(options.store, options.onEvent?.bind(options));
    this.histories = new SessionHistories(options.store, options.historyCache ?? DEFAULT_HISTORY_CACHE);
  }

  async create(options: CreateSessionOptions): Promise<Session> {
    const record: SessionRecord = {
      id: options.sessionId ?? newId("sess"),
      tenant: options.tenant,
      tenantConfig: await recordTenantConfig(options.tenantConfig),
      defaults: options.defaults ?? {},
      createdMs: Date.now(),
    };
    await this.store.createSession(record, this.quota(record.tenant));
    this.known.remember(record);
    return new Session(this, record);
  }

  async get(sessionId: string): Promise<Session | undefined> {
    const record = await this.store.getSession(sessionId);
    if (record) this.known.remember(record);
    else this.known.forget(sessionId);
    return record && new Session(this, record);
  }

  /**
   * @internal The session's record as this process created or last read it, else read from the store
   * (src/session/known-sessions.ts). It may be of a session another process has deleted since: only for a caller
   * that a later store write checks (startRunOf: the run's insert checks the session and its tenant).
   */
  async getRemembered(sessionId: string): Promise<SessionRecord | undefined> {
    return this.known.get(sessionId) ?? (await this.get(sessionId))?.record;
  }

  /** Sessions with their status (src/session/describe.ts: running while a run of it is busy here or stored as running). */
  async list(filter?: SessionFilter): Promise<SessionListing[]> {
    const sessions = await this.store.listSessions(filter);
    const listed: SessionListing[] = [];
    for (const session of sessions) {
      await this.runs.settleEnding(session.id);
      listed.push({ ...session, status: sessionStatus({ busy: this.runs.isBusy(session.id), latestRun: session.lastRun?.status }) });
    }
    return listed;
  }

  /**
   * Deletes a session and everything of it (Store.deleteSession), freeing its bytes of the tenant's store quota.
   * SESSION_BUSY while a run of it is starting or running; SESSION_FORKED while a fork keeps its history in it.
   */
  async delete(sessionId: string): Promise<DeletedSession> {
    const busy = this.runs.busyWith(sessionId);
    if (busy !== undefined)
      throw new HookboxError(
        "SESSION_BUSY",
        `session ${sessionId} ${busy === "starting" ? "has a run being started" : `has a run in flight (${busy})`}: cancel it or wait for it to end`,
        { sessionId, ...(busy === "starting" ? {} : { runId: busy }) },
      );
    const deleted = await this.store.deleteSession(sessionId);
    this.histories.forget(sessionId);
    this.known.forget(sessionId);
    return deleted;
  }

  async startRun(sessionId: string, prompt: string, options: RunOptions = {}): Promise<RunHandle> {
    return this.runs.claim(sessionId, async () => this.launchRun(await this.requireSession(sessionId), prompt, options));
  }

  /**
   * @internal As startRun, for a session whose record the caller has just read (the server's route, which read it
   * to check its tenant): it is not read again. A session deleted since is still refused (NOT_FOUND): the store
   * checks that it exists in the transaction that records the run.
   */
  async startRunOf(record: SessionRecord, prompt: string, options: RunOptions = {}): Promise<RunHandle> {
    return this.runs.claim(record.id, async () => this.launchRun(record, prompt, options));
  }

  private async launchRun(record: SessionRecord, prompt: string, options: RunOptions): Promise<RunHandle> {
    const sessionId = record.id;
    const runtime = await this.runtimeFor(record.tenant, record);
    // Called only under the session's claim (LiveRuns.claim): the session's earlier runs here have committed their
    // final writes, so the read need not commit the store's queued writes (other sessions') first.
    const history = await this.histories.load(sessionId, { sessionWritesCommitted: true });
    const runId = newId("run");
    const merged = mergeRunOptions(record.defaults, options);
    const quota = this.quota(record.tenant);
    const leaseTakenAt = performance.now();
    await this.store.createRun(
      {
        id: runId,
        sessionId,
        inferenceId: "",
        prompt,
        options: merged,
        status: "running",
        iterations: 0,
        startedMs: Date.now(),
        lastSeq: 0,
        ownerPid: process.pid,
        ownerInstance: thisProcessInstance(),
        ...(runtime.deployment ? { deployment: runtime.deployment } : {}),
      },
      // The record may be one this process remembers (getRemembered): the store checks it is still this tenant's.
      { ...quota, tenant: record.tenant },
    );
    return this.runs.launch({
      leaseTakenAt,
      runtime,
      request: { sessionId, runId, prompt, ...(history ? { history: history.turn } : {}), options: merged },
      journal: new Map(),
      // A session's first run leaves no turn in the cache: most sessions of an API have one run, and keeping
      // theirs costs the garbage collector more than the one store read their second run makes (docs/server.md).
      persistence: this.writerOptions(record, history, { snapshotIndex: 0, lastSeq: 0, iterations: 0, epoch: 1 }, { remember: !!history }),
    });
  }

  /**
   * Continues the session's interrupted run (`runId`, default its latest) from its last committed snapshot, with
   * its own options; `approvalTimeoutMs` replaces the run's for the approvals asked from now on.
   */
  async resume(sessionId: string, options: { runId?: string; approvalTimeoutMs?: number } = {}): Promise<RunHandle> {
    const runId = options.runId;
    return this.runs.claim(sessionId, async () => {
      const record = await this.requireSession(sessionId);
      const runs = await this.store.listRuns(sessionId);
      const run = runId ? runs.find((candidate) => candidate.id === runId) : runs.at(-1);
      if (!run)
        throw new HookboxError("NOT_RESUMABLE", `session ${sessionId} has no ${runId ? `run ${runId}` : "run"} to resume`, { sessionId });
      // A cluster store also hands over a running run whose node stopped renewing its lease (reopenRun checks).
      if (run.status !== "interrupted" && !(this.store.cluster && run.status === "running")) {
        throw new HookboxError(
          "NOT_RESUMABLE",
          `run ${run.id} of session ${sessionId} is ${run.status}, not interrupted; only an interrupted run can be resumed`,
          { sessionId, runId: run.id, status: run.status },
        );
      }
      const runtime = await this.runtimeFor(record.tenant, record, run);
      const snapshot = await this.store.latestSnapshotInfo(run.id);
      const journal = await this.store.listToolResults(run.id);
      // Cut off before its first snapshot, the run starts again from its history plus its user message.
      const start = snapshot ? await this.histories.read(snapshot) : await this.histories.load(sessionId, { beforeRunId: run.id });
      const turn = snapshot && start ? start.turn : withUserMessage(start?.turn, run);
      const iterations = snapshot?.iterations ?? 0;
      const approvalTimeoutMs = options.approvalTimeoutMs;
      const inferenceId = run.inferenceId || newId("inf");
      const leaseTakenAt = performance.now();
      const reopened = await this.store.reopenRun(run.id, {
        ownerPid: process.pid,
        ownerInstance: thisProcessInstance(),
        iterations,
        ...(this.store.cluster ? { node: this.store.cluster.node } : {}),
      });
      return this.launchResumed({
        leaseTakenAt,
        record,
        run: reopened,
        runtime,
        snapshot,
        start,
        turn,
        inferenceId,
        journal,
        ...(approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs }),
      });
    });
  }

  /**
   * Goes on with a run this process has just reopened: its own (`resume`) or one it took over from a node that
   * stopped renewing its lease (src/session/cluster-member.ts). Events continue after the reopened run's seq.
   */
  async takeOver(run: RunRecord, leaseTakenAt: number): Promise<RunHandle> {
    return this.runs.claim(run.sessionId, async () => {
      const record = await this.requireSession(run.sessionId);
      const runtime = await this.runtimeFor(record.tenant, record, run);
      const snapshot = await this.store.latestSnapshotInfo(run.id);
      const journal = await this.store.listToolResults(run.id);
      const start = snapshot ? await this.histories.read(snapshot) : await this.histories.load(run.sessionId, { beforeRunId: run.id });
      const turn = snapshot && start ? start.turn : withUserMessage(start?.turn, run);
      return this.launchResumed({
        leaseTakenAt,
        record,
        run,
        runtime,
        snapshot,
        start,
        turn,
        inferenceId: run.inferenceId || newId("inf"),
        journal,
      });
    });
  }

  private async launchResumed(resumed: {
    leaseTakenAt: number;
    record: SessionRecord;
    run: RunRecord;
    runtime: TenantRuntime;
    snapshot: SnapshotInfo | undefined;
    start: StartingTurn | undefined;
    turn: Turn;
    inferenceId: string;
    journal: Map<string, Block>;
    approvalTimeoutMs?: number;
  }): Promise<RunHandle> {
    const { record, run, runtime, snapshot, start, turn, inferenceId, journal, approvalTimeoutMs } = resumed;
    const iterations = snapshot?.iterations ?? 0;
    return this.runs.launch({
      leaseTakenAt: resumed.leaseTakenAt,
      runtime,
      request: {
        sessionId: run.sessionId,
        runId: run.id,
        prompt: run.prompt,
        options: approvalTimeoutMs === undefined ? run.options : { ...run.options, approvalTimeoutMs },
        // The budget goes on from what the run had used: a restart does not refill it.
        resumeFrom: { turn, nextSeq: run.lastSeq + 1, inferenceId, iterations, usage: await this.store.runUsage(run.id) },
      },
      journal,
      persistence: this.writerOptions(record, start, {
        snapshotIndex: snapshot?.index ?? 0,
        lastSeq: run.lastSeq,
        iterations,
        inferenceId,
        epoch: run.epoch ?? 0,
      }),
    });
  }

  /** What a run's writer starts from: the stored turn it continues, its own position, and where to leave its final turn. */
  private writerOptions(
    record: SessionRecord,
    start: StartingTurn | undefined,
    from: { snapshotIndex: number; lastSeq: number; iterations: number; inferenceId?: string; epoch: number },
    { remember = true }: { remember?: boolean } = {},
  ): LaunchOptions["persistence"] {
    const committed = ownCopy(start?.committed);
    return {
      tenant: record.tenant,
      ...this.quota(record.tenant),
      from: { ...from, ...(committed ? { turn: committed } : {}) },
      ...(remember ? { onFinalTurn: (snapshot, turn) => this.histories.remember(record.id, snapshot, turn) } : {}),
    };
  }

  async fork(sessionId: string, options: { runId?: string; sessionId?: string } = {}): Promise<Session> {
    const source = await this.requireSession(sessionId);
    const runs = await this.store.listRuns(sessionId);
    const run = options.runId ? runs.find((candidate) => candidate.id === options.runId) : runs.at(-1);
    if (options.runId && !run)
      throw new HookboxError("NOT_FOUND", `session ${sessionId} has no run ${options.runId}`, { sessionId, runId: options.runId });
    // The fork refers to its source's blocks where they are: nothing of the history is copied.
    const stored = run ? (await this.store.latestSnapshotInfo(run.id))?.stored : (await this.store.sessionHistory(sessionId))?.stored;
    const record: SessionRecord = {
      id: options.sessionId ?? newId("sess"),
      tenant: source.tenant,
      tenantConfig: source.tenantConfig,
      defaults: source.defaults,
      createdMs: Date.now(),
      ...(run ? { forkedFrom: { sessionId, runId: run.id } } : {}),
      ...(stored && "layout" in stored ? { base: stored.layout } : {}),
      ...(stored && "turnJson" in stored ? { initialTurn: JSON.parse(stored.turnJson) as Turn } : {}),
    };
    await this.store.createSession(record, this.quota(record.tenant));
    return new Session(this, record);
  }

  /** The conversation the next run continues: the latest run's last committed turn, or a fork's starting turn. */
  async history(sessionId: string): Promise<Turn | undefined> {
    await this.requireSession(sessionId);
    return (await this.histories.load(sessionId))?.turn;
  }

  activeRun(sessionId: string): RunHandle | undefined {
    return this.runs.activeRun(sessionId);
  }

  /**
   * On a cluster store: the leases of the runs executing here (renewed every leaseMs / 3 while any run).
   * @internal
   */
  get leases(): { tick(): Promise<void> } | undefined {
    return this.runs.leases;
  }

  /** The live handle of a run executing in this process. */
  liveRun(runId: string): RunHandle | undefined {
    return this.runs.handle(runId);
  }

  /**
   * @internal The tenant of a run executing here that has not handed over its final event, known without a store
   * read (src/session/live-runs.ts, `runningTenant`); undefined for any other run, which the caller reads from the store.
   */
  runningTenant(runId: string): string | undefined {
    return this.runs.runningTenant(runId);
  }

  /** Committed events with seq > afterSeq, then live ones; ends after the run's final `run-finished` (or when `signal` aborts). */
  events(runId: string, afterSeq = 0, signal?: AbortSignal): AsyncIterable<HookboxEvent> {
    return readRunEvents({ store: this.store, runId, afterSeq, feed: () => this.runs.feed(runId), ...(signal ? { signal } : {}) });
  }

  /** The same events as JSON text, stored ones as stored (what SSE sends); with `textDeltas`, the live text deltas too (no seq). */
  eventTexts(runId: string, afterSeq = 0, options: EventReaderOptions = {}): AsyncIterable<StoredEventText | LiveDeltaText> {
    return readRunEventTexts({ store: this.store, runId, afterSeq, feed: () => this.runs.feed(runId), ...options });
  }

  /** The same texts in batches: a page of stored ones, or the live ones committed since the last (SSE writes each batch at once). */
  eventTextBatches(runId: string, afterSeq = 0, options: EventReaderOptions = {}): AsyncIterable<(StoredEventText | LiveDeltaText)[]> {
    return readRunEventTextBatches({ store: this.store, runId, afterSeq, feed: () => this.runs.feed(runId), ...options });
  }

  /** The session and one page of its runs (src/session/describe.ts); only the latest run carries its turn. */
  async describe(sessionId: string, page: { offset?: number; limit?: number } = {}): Promise<SessionView | undefined> {
    await this.runs.settleEnding(sessionId);
    const described = await describeSession({ store: this.store, sessionId, busy: this.runs.isBusy(sessionId), page });
    if (!described) return undefined;
    const { view, turnJson } = described;
    if (turnJson !== undefined) view.turns[view.turns.length - 1].turn = JSON.parse(turnJson) as Turn;
    return view;
  }

  /** The same view as JSON text, the turn passed on as stored: what the HTTP API answers. */
  async describeJson(sessionId: string, page: { offset?: number; limit?: number } = {}): Promise<string | undefined> {
    await this.runs.settleEnding(sessionId);
    const described = await describeSession({ store: this.store, sessionId, busy: this.runs.isBusy(sessionId), page });
    return described && sessionViewJson(described.view, described.turnJson);
  }

  get liveRunCount(): number {
    return this.runs.count;
  }

  /** Resolves when no run is executing in this process, or after `timeoutMs`. */
  waitForIdle(timeoutMs: number): Promise<void> {
    return this.runs.waitForIdle(timeoutMs);
  }

  /** Stops every live run as `interrupted`, keeping what was committed (`hookbox resume` continues it). */
  interruptAll(reason: string): Promise<void> {
    return this.runs.interruptAll(reason);
  }

  async close(): Promise<void> {
    await this.interruptAll("the session manager was closed while the run was in flight");
  }

  private quota(tenant: string): { maxTenantBytes?: number } {
    const maxTenantBytes = this.storeQuota(tenant);
    return maxTenantBytes === undefined ? {} : { maxTenantBytes };
  }

  private async requireSession(sessionId: string): Promise<SessionRecord> {
    const record = await this.store.getSession(sessionId);
    if (!record) throw new HookboxError("NOT_FOUND", `no session ${sessionId} in store ${this.store.location}`, { sessionId });
    return record;
  }
}

/** A run cut off before its first snapshot resumes from its history plus its user message. */
function withUserMessage(history: Turn | undefined, run: RunRecord): Turn {
  const base: Turn = history ?? { id: `turn-${run.id}`, blocks: [], metadata: {}, data: {} };
  return {
    ...base,
    blocks: [...base.blocks, { id: `user-${run.id}`, kind: "user", role: "user", payload: { text: run.prompt }, metadata: {} }],
  };
}
