import { HookboxError } from "../errors.js";
import type { AnswerResult, ApprovalAnswer, RunHandle, RunResult, StartRunRequest, TenantRuntime } from "../host/types.js";
import type { HookboxEvent, LiveEvent } from "../events/types.js";
import { readRunEvents } from "./read-events.js";
import type { Block } from "../turns/turn.js";
import type { Store } from "../store/types.js";
import { StoredRunPersistence, type StoredRunPersistenceOptions } from "./persistence.js";
import { RunFeed } from "./run-feed.js";
import { isRunEnd } from "../store/interrupted.js";
import { RunLeases, type LeaseHolder } from "./run-leases.js";
import { performance } from "node:perf_hooks";
import { eventWithText } from "../events/event-json.js";

/** What a run is launched with: its runtime and request, its journal, and what its writer starts from. */
export interface LaunchOptions {
  /** performance.now() before the run's lease was taken (its createRun or reopen), on a cluster store. */
  leaseTakenAt?: number;
  runtime: TenantRuntime;
  request: Omit<StartRunRequest, "persistence"> & { runId: string };
  journal: Map<string, Block>;
  persistence: Pick<StoredRunPersistenceOptions, "tenant" | "maxTenantBytes" | "from" | "onFinalTurn">;
}

interface LiveRun {
  runId: string;
  sessionId: string;
  /** Its session's tenant, as the store checked it when the run was recorded (Store.createRun's `tenant`). */
  tenant: string;
  /** The loop returned: its final event may be committed any moment now. */
  closing?: boolean;
  /** The run's epoch under this process (its lease's fencing token on a cluster store). */
  epoch: number;
  feed: RunFeed;
  persistence: StoredRunPersistence;
  handle?: RunHandle;
  done?: Promise<void>;
}

/**
 * The runs executing in this process, and which sessions they keep busy (one active run per session).
 * A run's events are committed to the store as they happen; a run that ends without committing its final
 * event gets one here, and `interruptAll` stops them all as `interrupted`, keeping what was committed.
 */
export class LiveRuns implements LeaseHolder {
  /** By session id: the run that makes it busy ("starting" while the run is being set up). */
  private readonly busy = new Map<string, LiveRun | "starting">();
  /** By run id: runs executing in this process. */
  private readonly live = new Map<string, LiveRun>();

  /** The leases of the runs executing here, on a cluster store (src/session/run-leases.ts). */
  readonly leases: RunLeases | undefined;

  constructor(
    private readonly store: Store,
    /** Sees every event of every run this process runs, after it is committed (the server's metrics). */
    private readonly onEvent?: (tenant: string, runId: string, event: HookboxEvent) => void,
  ) {
    this.leases = store.cluster && new RunLeases(store.cluster, this);
  }

  isBusy(sessionId: string): boolean {
    return this.busy.has(sessionId);
  }

  /** The id of the run that keeps the session busy here, "starting" while one is being set up, or undefined. */
  busyWith(sessionId: string): string | undefined {
    const entry = this.busy.get(sessionId);
    return entry === "starting" ? "starting" : entry?.runId;
  }

  activeRun(sessionId: string): RunHandle | undefined {
    const entry = this.busy.get(sessionId);
    return entry === "starting" ? undefined : entry?.handle;
  }

  /** The live handle of a run executing in this process. */
  handle(runId: string): RunHandle | undefined {
    return this.live.get(runId)?.handle;
  }

  /**
   * The tenant of a run executing in this process whose final event is not yet handed to the store, else
   * undefined: what a request may learn of the run without reading the store (docs/server.md). While such a run
   * is stored as running, every store refuses to delete its session (SESSION_BUSY, src/store/deletable.ts), so the
   * run and its session exist, and its tenant never changes. Not on a cluster store: a node that has missed its
   * lease's end does not know that another node may have finished the run since.
   */
  runningTenant(runId: string): string | undefined {
    if (this.leases) return undefined;
    const run = this.live.get(runId);
    if (!run || run.closing || run.persistence.ending) return undefined;
    return run.tenant;
  }

  /** The live event feed of a run executing in this process. */
  feed(runId: string): RunFeed | undefined {
    return this.live.get(runId)?.feed;
  }

  get count(): number {
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
      this.leases?.forget(run.runId);
      this.release(run);
      run.handle?.cancel(reason);
      const before = await this.store.getRun(run.runId);
      await this.store.markInterrupted(run.runId, reason, run.epoch ? { epoch: run.epoch } : {});
      for (const event of await this.store.listEvents(run.runId, before?.lastSeq ?? 0)) run.feed.publish(eventWithText(event));
    }
    if (runs.length > 0) await withTimeout(Promise.all(runs.map((run) => run.done)), 2000);
    this.leases?.stop();
  }

  /** The runs executing here, with their epochs (what a cluster node renews the leases of). */
  held(): { runId: string; epoch: number }[] {
    return [...this.live.values()].map((run) => ({ runId: run.runId, epoch: run.epoch }));
  }

  /**
   * Stops a run this process no longer owns (another node took it over, or the database was lost): nothing more
   * of it is written here, its loop is cancelled, and its readers go on from the store (its feed closes).
   */
  lose(runId: string, reason: string): void {
    const run = this.live.get(runId);
    if (!run) return;
    run.persistence.freeze();
    this.live.delete(runId);
    this.leases?.forget(runId);
    this.release(run);
    run.handle?.cancel(reason);
    run.feed.close();
  }

  /** Resolves once the session's run, if it has handed over its final event, has had it committed (the session is then free). */
  async settleEnding(sessionId: string): Promise<void> {
    const entry = this.busy.get(sessionId);
    if (entry && entry !== "starting" && entry.persistence.ending) await entry.persistence.settled();
  }

  /** Runs `start` unless the session already has an active run here (SESSION_BUSY); the session is busy meanwhile. */
  async claim(sessionId: string, start: () => Promise<RunHandle>): Promise<RunHandle> {
    // A run that has finished but whose final event is still being committed is not kept busy for that.
    await this.settleEnding(sessionId);
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

  /** Starts a run on `runtime` with stored persistence; the session stays busy until its final event is committed. */
  launch(launch: LaunchOptions): RunHandle {
    const { runtime, request } = launch;
    const feed = new RunFeed(launch.persistence.from?.lastSeq ?? 0);
    const run: LiveRun = {
      runId: request.runId,
      sessionId: request.sessionId,
      tenant: launch.persistence.tenant,
      epoch: launch.persistence.from?.epoch ?? 0,
      feed,
      persistence: new StoredRunPersistence({
        ...launch.persistence,
        store: this.store,
        runId: request.runId,
        sessionId: request.sessionId,
        feed,
        committedToolResults: launch.journal,
        ...(this.leases ? { fence: () => this.leases!.fence(request.runId) } : {}),
        onLost: (error) => this.lose(request.runId, error.message),
      }),
    };
    this.leases?.taken(run.runId, launch.leaseTakenAt ?? performance.now());
    // The session is free for its next run as soon as the final event is committed.
    feed.subscribe(({ event }) => {
      if (isRunEnd(event)) this.release(run);
    });
    const observe = this.onEvent;
    if (observe) feed.subscribe(({ event }) => observe(launch.persistence.tenant, run.runId, event));
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
    // Readers of the handle get events once committed, as every other reader of the session does.
    run.handle = handle = new CommittedEventsHandle(handle, (fromSeq, textDeltas) =>
      readRunEvents({ store: this.store, runId: run.runId, afterSeq: fromSeq - 1, feed: () => this.feed(run.runId), textDeltas }),
    );
    // The loop catches its own failures; a rejection here is a host bug. It fails this run (HOST_FAULT), is
    // logged once, and never escapes as an unhandled rejection that could take the process down.
    run.done = handle
      .wait()
      .then(
        (result) => this.settle(run, result),
        (error: unknown) => {
          process.stderr.write(`hookbox: run ${run.runId} failed on a host fault: ${(error as Error)?.stack ?? String(error)}\n`);
          return this.settle(run, { status: "failed", reason: hostFaultReason(error), errorCode: "HOST_FAULT" });
        },
      )
      .catch((error: unknown) => {
        process.stderr.write(`hookbox: run ${run.runId} could not be settled: ${(error as Error)?.stack ?? String(error)}\n`);
      });
    return handle;
  }

  /** After the loop returns: a run that ended without committing its final event still gets one. */
  private async settle(
    run: LiveRun,
    result: (Pick<RunResult, "status" | "reason" | "errorCode"> & { iterations?: number }) | undefined,
  ): Promise<void> {
    run.closing = true;
    if (this.live.get(run.runId) === run) {
      await run.persistence.closeRun(result);
      this.live.delete(run.runId);
      this.leases?.forget(run.runId);
    }
    this.release(run);
  }

  private release(run: LiveRun): void {
    if (this.busy.get(run.sessionId) === run) this.busy.delete(run.sessionId);
  }
}

/**
 * A run's handle whose `events()` yields each event once it is committed (read from the store, then the run's
 * feed), so whoever follows a stored run (`hookbox run --store`, a library caller) never sees an event that a
 * crash could still lose. Everything else is the loop's own handle.
 */
class CommittedEventsHandle implements RunHandle {
  constructor(
    private readonly inner: RunHandle,
    private readonly committedEvents: (fromSeq: number, textDeltas: boolean) => AsyncIterable<LiveEvent>,
  ) {}
  get runId() {
    return this.inner.runId;
  }
  get sessionId() {
    return this.inner.sessionId;
  }
  get inferenceId() {
    return this.inner.inferenceId;
  }
  get pauseId() {
    return this.inner.pauseId;
  }
  get openApprovals() {
    return this.inner.openApprovals;
  }
  events(fromSeq?: number): AsyncIterable<HookboxEvent>;
  events(fromSeq: number | undefined, options: { textDeltas: boolean }): AsyncIterable<LiveEvent>;
  events(fromSeq = 1, options: { textDeltas?: boolean } = {}): AsyncIterable<LiveEvent> {
    return this.committedEvents(fromSeq, options.textDeltas ?? false);
  }
  wait(): Promise<RunResult> {
    return this.inner.wait();
  }
  cancel(reason?: string): void {
    this.inner.cancel(reason);
  }
  continue(pauseId: string): boolean {
    return this.inner.continue(pauseId);
  }
  answerApproval(pauseId: string, answer: ApprovalAnswer): AnswerResult {
    return this.inner.answerApproval(pauseId, answer);
  }
}

/** What a tenant sees of a host fault: the error's first line, never its stack (which names host files). */
function hostFaultReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return `the host failed while running this run: ${message.split("\n")[0].slice(0, 200)}`;
}

/** Waits for `promise` at most `ms` (never rejects; the timer does not keep the process alive). */
async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]);
  clearTimeout(timer);
}
