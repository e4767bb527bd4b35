import { HookboxError, isHookboxError } from "../errors.js";
import type { HookboxEvent } from "../events/types.js";
import type { RunHandle, RunResult, StartRunRequest, TenantRuntime } from "../host/types.js";
import type { Block } from "../turns/turn.js";
import type { Store } from "../store/types.js";
import { StoredRunPersistence } from "./persistence.js";
import { RunFeed } from "./run-feed.js";

interface LiveRun {
  runId: string;
  sessionId: string;
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
export class LiveRuns {
  /** By session id: the run that makes it busy ("starting" while the run is being set up). */
  private readonly busy = new Map<string, LiveRun | "starting">();
  /** By run id: runs executing in this process. */
  private readonly live = new Map<string, LiveRun>();

  constructor(private readonly store: Store) {}

  isBusy(sessionId: string): boolean {
    return this.busy.has(sessionId);
  }

  activeRun(sessionId: string): RunHandle | undefined {
    const entry = this.busy.get(sessionId);
    return entry === "starting" ? undefined : entry?.handle;
  }

  /** The live handle of a run executing in this process. */
  handle(runId: string): RunHandle | undefined {
    return this.live.get(runId)?.handle;
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
      this.release(run);
      run.handle?.cancel(reason);
      const before = await this.store.getRun(run.runId);
      await this.store.markInterrupted(run.runId, reason);
      for (const event of await this.store.listEvents(run.runId, before?.lastSeq ?? 0)) run.feed.publish(event);
    }
    if (runs.length > 0) await withTimeout(Promise.all(runs.map((run) => run.done)), 2000);
  }

  /** Runs `start` unless the session already has an active run here (SESSION_BUSY); the session is busy meanwhile. */
  async claim(sessionId: string, start: () => Promise<RunHandle>): Promise<RunHandle> {
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
  launch(
    runtime: TenantRuntime,
    request: Omit<StartRunRequest, "persistence"> & { runId: string },
    journal: Map<string, Block>,
    quota: { maxTenantBytes?: number } = {},
  ): RunHandle {
    const feed = new RunFeed();
    const run: LiveRun = {
      runId: request.runId,
      sessionId: request.sessionId,
      feed,
      persistence: new StoredRunPersistence({ store: this.store, runId: request.runId, feed, committedToolResults: journal, ...quota }),
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
          (error: unknown) => {
            // Readers still learn how the run ended; a full store takes the same event once it has room.
            run.feed.publish(event);
            if (isHookboxError(error) && error.code === "STORE_FULL") this.storeWhenRoom(run.runId, event);
          },
        );
      }
      this.live.delete(run.runId);
    }
    this.release(run);
  }

  /**
   * Writes a run's final event once the full store has room again, retrying with a growing pause (at most
   * 30 s), so the stored run ends as its readers saw it end. Stops on any other failure; a process that exits
   * first leaves the run `running`, and the next store open marks it interrupted.
   */
  private storeWhenRoom(runId: string, event: HookboxEvent, waitMs = 1000): void {
    setTimeout(() => {
      this.store.appendEvent(runId, event).catch((error: unknown) => {
        if (isHookboxError(error) && error.code === "STORE_FULL") this.storeWhenRoom(runId, event, Math.min(waitMs * 2, 30_000));
      });
    }, waitMs).unref();
  }

  private release(run: LiveRun): void {
    if (this.busy.get(run.sessionId) === run) this.busy.delete(run.sessionId);
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
