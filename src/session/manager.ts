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
import { randomUUID } from "node:crypto";
import { HookboxError } from "../errors.js";
import type { HookboxEvent } from "../events/types.js";
import type { RunHandle, RunResult } from "../loop/handle.js";
import type { RunOptions, StartRunRequest, TenantRuntime } from "../host/types.js";
import type { Block, Turn } from "../turns/turn.js";
import type { RunRecord, SessionRecord, SessionSummary, Store } from "../store/types.js";
import { mergeRunOptions } from "../host/run-defaults.js";
import { recordTenantConfig } from "./tenant-record.js";
import { StoredRunPersistence } from "./persistence.js";
import { RunFeed } from "./run-feed.js";
import { readRunEvents } from "./read-events.js";
import { Session, type CreateSessionOptions } from "./session.js";

export interface SessionManagerOptions {
  store: Store;
  /** The runtime that runs this session's tenant (built once per tenant by the server; from the record by resume). */
  runtimeFor(tenant: string, session: SessionRecord): Promise<TenantRuntime>;
}

interface LiveRun {
  runId: string;
  sessionId: string;
  feed: RunFeed;
  persistence: StoredRunPersistence;
  handle?: RunHandle;
  done?: Promise<void>;
}

export interface SessionView {
  sessionId: string;
  tenant: string;
  status: "idle" | "running" | "interrupted";
  createdMs: number;
  forkedFrom?: { sessionId: string; runId: string };
  turns: { runId: string; status: RunRecord["status"]; prompt: string; phase?: string; turn?: Turn }[];
}

export class SessionManager {
  readonly store: Store;
  private readonly runtimeFor: SessionManagerOptions["runtimeFor"];
  /** By session id: the run that makes it busy ("starting" while the run is being set up). */
  private readonly busy = new Map<string, LiveRun | "starting">();
  /** By run id: runs executing in this process. */
  private readonly live = new Map<string, LiveRun>();

  constructor(options: SessionManagerOptions) {
    this.store = options.store;
    this.runtimeFor = options.runtimeFor;
  }

  async create(options: CreateSessionOptions): Promise<Session> {
    const record: SessionRecord = {
      id: options.sessionId ?? randomUUID(),
      tenant: options.tenant,
      tenantConfig: await recordTenantConfig(options.tenantConfig),
      defaults: options.defaults ?? {},
      createdMs: Date.now(),
    };
    await this.store.createSession(record);
    return new Session(this, record);
  }

  async get(sessionId: string): Promise<Session | undefined> {
    const record = await this.store.getSession(sessionId);
    return record && new Session(this, record);
  }

  list(filter?: { tenant?: string }): Promise<SessionSummary[]> {
    return this.store.listSessions(filter);
  }

  async startRun(sessionId: string, prompt: string, options: RunOptions = {}): Promise<RunHandle> {
    return this.claim(sessionId, async () => {
      const record = await this.requireSession(sessionId);
      const runtime = await this.runtimeFor(record.tenant, record);
      const history = await this.history(sessionId);
      const runId = randomUUID();
      const merged = mergeRunOptions(record.defaults, options);
      await this.store.createRun({
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
      });
      return this.launch(runtime, { sessionId, runId, prompt, ...(history ? { history } : {}), options: merged }, new Map());
    });
  }

  /** Continues the session's interrupted run (default its latest) from its last committed snapshot. */
  async resume(sessionId: string, runId?: string): Promise<RunHandle> {
    return this.claim(sessionId, async () => {
      const record = await this.requireSession(sessionId);
      const runs = await this.store.listRuns(sessionId);
      const run = runId ? runs.find((candidate) => candidate.id === runId) : runs.at(-1);
      if (!run)
        throw new HookboxError("NOT_RESUMABLE", `session ${sessionId} has no ${runId ? `run ${runId}` : "run"} to resume`, { sessionId });
      if (run.status !== "interrupted") {
        throw new HookboxError(
          "NOT_RESUMABLE",
          `run ${run.id} of session ${sessionId} is ${run.status}, not interrupted; only an interrupted run can be resumed`,
          { sessionId, runId: run.id, status: run.status },
        );
      }
      const runtime = await this.runtimeFor(record.tenant, record);
      const snapshot = await this.store.latestSnapshot(run.id);
      const journal = await this.store.listToolResults(run.id);
      const turn = snapshot?.turn ?? withUserMessage(await this.historyBefore(record, runs, run.id), run);
      const iterations = snapshot?.iterations ?? 0;
      const inferenceId = run.inferenceId || randomUUID();
      await this.store.reopenRun(run.id, { ownerPid: process.pid, iterations });
      return this.launch(
        runtime,
        {
          sessionId,
          runId: run.id,
          prompt: run.prompt,
          options: run.options,
          resumeFrom: { turn, nextSeq: run.lastSeq + 1, inferenceId, iterations },
        },
        journal,
      );
    });
  }

  async fork(sessionId: string, options: { runId?: string; sessionId?: string } = {}): Promise<Session> {
    const source = await this.requireSession(sessionId);
    const runs = await this.store.listRuns(sessionId);
    const run = options.runId ? runs.find((candidate) => candidate.id === options.runId) : runs.at(-1);
    if (options.runId && !run)
      throw new HookboxError("NOT_FOUND", `session ${sessionId} has no run ${options.runId}`, { sessionId, runId: options.runId });
    const turn = run ? (await this.store.latestSnapshot(run.id))?.turn : source.initialTurn;
    const record: SessionRecord = {
      id: options.sessionId ?? randomUUID(),
      tenant: source.tenant,
      tenantConfig: source.tenantConfig,
      defaults: source.defaults,
      createdMs: Date.now(),
      ...(run ? { forkedFrom: { sessionId, runId: run.id } } : {}),
      ...(turn ? { initialTurn: turn } : {}),
    };
    await this.store.createSession(record);
    return new Session(this, record);
  }

  /** The conversation the next run continues: the latest run's last committed turn, or a fork's starting turn. */
  async history(sessionId: string): Promise<Turn | undefined> {
    const record = await this.requireSession(sessionId);
    return this.historyBefore(record, await this.store.listRuns(sessionId));
  }

  activeRun(sessionId: string): RunHandle | undefined {
    const entry = this.busy.get(sessionId);
    return entry === "starting" ? undefined : entry?.handle;
  }

  /** The live handle of a run executing in this process. */
  liveRun(runId: string): RunHandle | undefined {
    return this.live.get(runId)?.handle;
  }

  /** Committed events with seq > afterSeq, then live ones; ends after the run's final `run-finished` (or when `signal` aborts). */
  events(runId: string, afterSeq = 0, signal?: AbortSignal): AsyncIterable<HookboxEvent> {
    return readRunEvents({ store: this.store, runId, afterSeq, feed: () => this.live.get(runId)?.feed, ...(signal ? { signal } : {}) });
  }

  async describe(sessionId: string): Promise<SessionView | undefined> {
    const record = await this.store.getSession(sessionId);
    if (!record) return undefined;
    const runs = await this.store.listRuns(sessionId);
    const turns: SessionView["turns"] = [];
    for (const run of runs) {
      const snapshot = await this.store.latestSnapshot(run.id);
      turns.push({
        runId: run.id,
        status: run.status,
        prompt: run.prompt,
        ...(snapshot ? { phase: snapshot.phase, turn: snapshot.turn } : {}),
      });
    }
    const status = this.busy.has(sessionId) ? "running" : runs.at(-1)?.status === "interrupted" ? "interrupted" : "idle";
    return {
      sessionId,
      tenant: record.tenant,
      status,
      createdMs: record.createdMs,
      ...(record.forkedFrom ? { forkedFrom: record.forkedFrom } : {}),
      turns,
    };
  }

  get liveRunCount(): number {
    return this.live.size;
  }

  /** Resolves when no run is executing in this process, or after `timeoutMs`. */
  async waitForIdle(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.live.size > 0 && Date.now() < deadline) {
      await withTimeout(Promise.race([...this.live.values()].map((run) => run.done)), deadline - Date.now());
    }
  }

  /**
   * Stops every live run as `interrupted`, keeping what was committed: later writes of the run are dropped,
   * the run is cancelled, and a final interrupted event tells readers to stop. `hookbox resume` continues it.
   */
  async interruptAll(reason: string): Promise<void> {
    const runs = [...this.live.values()];
    for (const run of runs) {
      run.persistence.freeze();
      this.live.delete(run.runId);
      this.release(run);
      run.handle?.cancel(reason);
      const before = await this.store.getRun(run.runId);
      await this.store.markInterrupted(run.runId, reason);
      for (const event of await this.store.listEvents(run.runId, before?.lastSeq ?? 0)) run.feed.publish(event);
    }
    if (runs.length > 0) await withTimeout(Promise.all(runs.map((run) => run.done)), 2000);
  }

  async close(): Promise<void> {
    await this.interruptAll("the session manager was closed while the run was in flight");
  }

  private async claim(sessionId: string, start: () => Promise<RunHandle>): Promise<RunHandle> {
    const entry = this.busy.get(sessionId);
    if (entry) {
      const runId = entry === "starting" ? "being started" : entry.runId;
      throw new HookboxError(
        "SESSION_BUSY",
        `session ${sessionId} already has an active run (${runId}); wait for it to finish or cancel it first`,
        { sessionId, runId },
      );
    }
    this.busy.set(sessionId, "starting");
    try {
      return await start();
    } catch (error) {
      if (this.busy.get(sessionId) === "starting") this.busy.delete(sessionId);
      throw error;
    }
  }

  private launch(
    runtime: TenantRuntime,
    request: Omit<StartRunRequest, "persistence"> & { runId: string },
    journal: Map<string, Block>,
  ): RunHandle {
    const feed = new RunFeed();
    const run: LiveRun = {
      runId: request.runId,
      sessionId: request.sessionId,
      feed,
      persistence: new StoredRunPersistence(this.store, request.runId, feed, journal),
    };
    // The session is free for its next run as soon as the final event is committed.
    feed.subscribe((event) => {
      if (event.type === "run-finished" && event.status !== "interrupted") this.release(run);
    });
    this.live.set(run.runId, run);
    this.busy.set(run.sessionId, run);
    let handle: RunHandle;
    try {
      handle = runtime.start({ ...request, persistence: run.persistence });
    } catch (error) {
      this.live.delete(run.runId);
      this.release(run);
      void this.store.markInterrupted(run.runId, `the run could not start: ${(error as Error)?.message ?? String(error)}`);
      throw error;
    }
    run.handle = handle;
    run.done = handle.wait().then(
      (result) => this.settle(run, result),
      () => this.settle(run, undefined),
    );
    return handle;
  }

  /** After the loop returns: a run that ended without committing its final event still gets one. */
  private async settle(run: LiveRun, result: RunResult | undefined): Promise<void> {
    if (this.live.get(run.runId) === run) {
      const stored = await this.store.getRun(run.runId).catch(() => undefined);
      if (stored?.status === "running") {
        const event: HookboxEvent = {
          type: "run-finished",
          seq: stored.lastSeq + 1,
          timestampMs: Date.now(),
          sessionId: run.sessionId,
          inferenceId: stored.inferenceId,
          status: result?.status ?? "failed",
          iterations: result?.iterations ?? stored.iterations,
          ...(result?.reason ? { reason: result.reason } : {}),
          ...(result?.errorCode ? { errorCode: result.errorCode } : {}),
        };
        await this.store.appendEvent(run.runId, event).then(
          () => run.feed.publish(event),
          () => undefined,
        );
      }
      this.live.delete(run.runId);
    }
    this.release(run);
  }

  private release(run: LiveRun): void {
    if (this.busy.get(run.sessionId) === run) this.busy.delete(run.sessionId);
  }

  private async requireSession(sessionId: string): Promise<SessionRecord> {
    const record = await this.store.getSession(sessionId);
    if (!record) throw new HookboxError("NOT_FOUND", `no session ${sessionId} in store ${this.store.location}`, { sessionId });
    return record;
  }

  private async historyBefore(record: SessionRecord, runs: RunRecord[], beforeRunId?: string): Promise<Turn | undefined> {
    const end = beforeRunId ? runs.findIndex((run) => run.id === beforeRunId) : runs.length;
    for (let i = end - 1; i >= 0; i--) {
      const snapshot = await this.store.latestSnapshot(runs[i].id);
      if (snapshot) return snapshot.turn;
    }
    return record.initialTurn;
  }
}

/** Waits for `promise` at most `ms` (never rejects; the timer does not keep the process alive). */
async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]);
  clearTimeout(timer);
}

/** A run cut off before its first snapshot resumes from its history plus its user message. */
function withUserMessage(history: Turn | undefined, run: RunRecord): Turn {
  const base: Turn = history ?? { id: `turn-${run.id}`, blocks: [], metadata: {}, data: {} };
  return {
    ...base,
    blocks: [...base.blocks, { id: `user-${run.id}`, kind: "user", role: "user", payload: { text: run.prompt }, metadata: {} }],
  };
}
