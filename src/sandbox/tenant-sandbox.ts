import { Admission, type AdmissionLimits, type Admitted } from "./admission.js";
import { CallbackGate, type GateOwner } from "./callback-gate.js";
import { CallbacksInFlight, type Callback, type CallbackRequest } from "./callback.js";
import { HookboxError, isHookboxError } from "../errors.js";
import type { BundleVariant, Isolation, OpenRunOptions, ScriptManifest, ScriptSource, SandboxLimits, TenantSandbox } from "./api.js";
import type { Bundle } from "./bundle-output.js";
import { bundleScript } from "./bundler.js";
import { LazyResult, ResultUse, type CallReply } from "./call-args.js";
import { describeCall, reviveLoadError } from "./call-errors.js";
import { validateManifest } from "./manifest.js";
import { OutcomeDispatch } from "./outcome-dispatch.js";
import { TenantPlacement, type TenantStanding } from "./placement.js";
import { ToolSchemas } from "../schema/tool-schemas.js";
import type { DoneMessage, WorkerLimits } from "./wire/protocol.js";
import { SandboxRunImpl, type RunOwner } from "./sandbox-run.js";
import type { LiveIsolates } from "./live-isolates.js";
import type { Supervisor } from "./supervisor.js";
import { culpritError, type WorkerExit } from "./worker-exit.js";
import type { WorkerProcess } from "./worker-process.js";

export interface TenantOptions extends AdmissionLimits {
  supervisor: Supervisor;
  /** The pool's live isolates, for idle eviction and the cap. */
  live: LiveIsolates;
  maxLogChars: number;
  logsPerSecond: number;
}

let lastCallId = 0;

/**
 * One tenant's sandbox, host side: its loaded scripts (kept so a replaced worker can be refilled), its open
 * runs and its callbacks in progress. A callback passes admission (admission.ts), waits for the tenant's
 * gate (callback-gate.ts: one exec message at the worker at a time), goes to the worker placement chose
 * (placement.ts), and its outcome comes back through outcome-dispatch.ts. A callback awaiting the host
 * (middleware `next()`, a capability) does not hold the gate: the calls its chain makes are served, and so
 * are calls queued behind it.
 */
export class TenantSandboxImpl implements TenantSandbox, GateOwner<Callback>, RunOwner {
  limits: SandboxLimits;
  readonly scripts = new Map<string, { manifest: ScriptManifest; bundle: Bundle }>();
  /** This tenant's own schema checker: nothing of one tenant's schemas is visible to another's. */
  private readonly schemas = new ToolSchemas();
  /** How each hook used its big results: decides how the next one travels (call-args.ts). */
  private readonly resultUse = new ResultUse();
  private readonly gate = new CallbackGate<Callback>(this);
  private readonly callbacks = new CallbacksInFlight(() => {
    this.leaveIfIdle();
  });
  /** Open runs by id: where the worker's log lines go. */
  private readonly runs = new Map<string, SandboxRunImpl>();
  private readonly admission: Admission;
  private readonly placement: TenantPlacement;
  private readonly dispatch: OutcomeDispatch;

  constructor(
    readonly tenant: string,
    limits: SandboxLimits,
    where: { isolation: Isolation; cordon: string },
    private readonly options: TenantOptions,
    /** Its owner's standing, shared by every sandbox of the owner (placement.ts). */
    standing?: TenantStanding,
  ) {
    this.limits = limits;
    this.admission = new Admission(tenant, options, this.scripts, this.resultUse);
    this.placement = new TenantPlacement(
      { tenant, hasPlacedCallbacks: () => this.callbacks.anyPlaced(), evictIfIdle: () => this.evictIfIdle() },
      where,
      options.supervisor,
      options.live,
      standing,
    );
    this.dispatch = new OutcomeDispatch({
      tenant,
      callbacks: this.callbacks,
      gate: this.gate,
      resultUse: this.resultUse,
      maxPayloadBytes: options.maxPayloadBytes,
      logsOf: (runId) => this.runs.get(runId)?.onLog,
      quarantine: () => this.placement.quarantine(),
      segmentBudgetMs: () => this.segmentBudgetMs(),
    });
  }

  /** Set by the pool; a change takes effect when nothing of the tenant runs (the tenant moves). */
  get isolation(): Isolation {
    return this.placement.isolation;
  }

  set isolation(isolation: Isolation) {
    this.placement.isolation = isolation;
  }

  /** Set by the pool, as the isolation is. */
  get cordon(): string {
    return this.placement.cordon;
  }

  set cordon(cordon: string) {
    this.placement.cordon = cordon;
  }

  async load(sources: ScriptSource[], options: { variant?: BundleVariant } = {}): Promise<ScriptManifest[]> {
    const bundles = await Promise.all(sources.map((source) => bundleScript(source, undefined, options.variant)));
    const loaded: { manifest: ScriptManifest; bundle: Bundle }[] = [];
    for (const bundle of bundles) loaded.push({ manifest: await this.loadBundle(bundle), bundle });
    const names = new Map<string, string>();
    for (const { manifest, bundle } of loaded) {
      const other = names.get(manifest.name);
      if (other !== undefined)
        throw new HookboxError(
          "SCRIPT_LOAD",
          `two scripts are named "${manifest.name}" (${other} and ${bundle.displayPath}): script names must be unique`,
        );
      names.set(manifest.name, bundle.displayPath);
    }
    for (const entry of loaded) this.scripts.set(entry.manifest.name, entry);
    return loaded.map((entry) => entry.manifest);
  }

  /** Evaluates one bundle in the tenant's isolate and validates what its default export declares. */
  private loadBundle(bundle: Bundle): Promise<ScriptManifest> {
    const loadError = (error: unknown) =>
      isHookboxError(error) && error.code === "SCRIPT_LOAD"
        ? error
        : new HookboxError("SCRIPT_LOAD", `${bundle.displayPath}: ${(error as Error).message}`, { cause: (error as HookboxError).code });
    return new Promise<ScriptManifest>((resolve, reject) => {
      this.gate.enqueue({
        send: async (worker) => {
          worker.ensureBundle(bundle);
          const load = { type: "load" as const, tenant: this.tenant, limits: this.workerLimits(), bundleHash: bundle.hash };
          // The gate dispatches the reply (breach, logs) once it is returned, as for every message.
          const done = await worker.exec(load, this.segmentBudgetMs());
          try {
            if (done.load?.ok) resolve(validateManifest(done.load.manifest, bundle, this.schemas));
            else reject(reviveLoadError(done.load?.error ?? { code: "SCRIPT_LOAD", message: "load failed" }, bundle.displayPath));
          } catch (error) {
            reject(loadError(error));
          }
          return done;
        },
        fail: (error) => reject(loadError(error)),
      });
    });
  }

  async openRun(options: OpenRunOptions): Promise<SandboxRunImpl> {
    for (const manifest of options.scripts) {
      const entry = this.scripts.get(manifest.name);
      if (entry === undefined || entry.manifest.bundleHash !== manifest.bundleHash) {
        throw new HookboxError("SCRIPT_LOAD", `script "${manifest.name}" is not loaded in tenant ${this.tenant}`);
      }
    }
    const run = new SandboxRunImpl(this, options.runId, options.scripts, options.onLog, options.capabilities);
    this.runs.set(run.runId, run);
    return run;
  }

  /** RunOwner: runs one callback; resolves with what it returned (replyValue() makes it a value). */
  call(run: SandboxRunImpl, request: CallbackRequest): Promise<CallReply> {
    let admitted: Admitted;
    try {
      admitted = this.admission.admit(run, request, this.gate.waiting);
    } catch (error) {
      // A refusal rejects the call like any failure of it; nothing was queued.
      return Promise.reject(error as HookboxError);
    }
    const { bundle, encoded, depth, prefetch } = admitted;
    return new Promise<CallReply>((resolve, reject) => {
      // Field by field: a spread of the request and of an optional field would each cost a copy, on every call.
      const callback: Callback = {
        script: request.script,
        kind: request.kind,
        target: request.target,
        args: request.args,
        callId: ++lastCallId,
        run,
        depth,
        finished: false,
        awaitingHost: 0,
        resolve,
        reject,
      };
      if (request.next !== undefined) callback.next = request.next;
      if (encoded.lazy !== undefined) callback.lazy = new LazyResult(encoded.lazy);
      const lazy = callback.lazy;
      if (lazy !== undefined && prefetch) {
        // This hook returned the last big result untouched: parse this one while the host waits anyway.
        setImmediate(() => {
          if (!callback.finished) lazy.prefetch();
        });
      }
      this.callbacks.add(callback);
      this.gate.enqueue({
        call: callback,
        retryable: true,
        send: (worker) => {
          callback.worker = worker;
          worker.ensureBundle(bundle);
          const message = {
            type: "call" as const,
            tenant: this.tenant,
            limits: this.workerLimits(),
            runId: run.runId,
            script: request.script,
            bundleHash: bundle.hash,
            callId: callback.callId,
            kind: request.kind,
            target: request.target,
            args: encoded.args,
            lazy: encoded.lazy,
          };
          return worker.exec(message, 2 * this.segmentBudgetMs());
        },
        fail: (error) => this.callbacks.fail(callback, error),
      });
    });
  }

  /** RunOwner: what the run's script contexts counted (instrumented bundles; others answer "null"). */
  coverage(run: SandboxRunImpl): Promise<{ script: string; text: string }[]> {
    return new Promise((resolve, reject) => {
      this.gate.enqueue({
        send: async (worker) => {
          const done = await worker.exec({ type: "coverage", tenant: this.tenant, runId: run.runId }, this.segmentBudgetMs());
          resolve(done.coverage ?? []);
          return done;
        },
        fail: reject,
      });
    });
  }

  /** RunOwner: the run closed; its callbacks still in progress are cancelled and its contexts dropped. */
  closeRun(run: SandboxRunImpl): void {
    if (this.runs.get(run.runId) === run) this.runs.delete(run.runId);
    for (const callback of this.callbacks.all()) {
      if (callback.run === run)
        this.callbacks.fail(
          callback,
          new HookboxError("CANCELLED", `${callback.script}: ${describeCall(callback)} was cancelled: the run was closed`),
        );
    }
    this.placement.worker?.send({ type: "close-run", tenant: this.tenant, runId: run.runId });
  }

  /** The supervisor lost a worker: every callback of ours on it fails closed. */
  onWorkerLost(worker: WorkerProcess, exit: WorkerExit): void {
    const { ours, culprit } = this.placement.workerLost(worker, exit);
    if (!ours) return;
    // The watchdog blames the oldest message at the worker: the one that was running.
    const running = this.gate.running;
    for (const callback of this.callbacks.all()) {
      if (callback.worker !== worker) continue;
      // The in-flight first message of a call is settled by its own rejection (it may be retried).
      if (this.gate.hasRetryableInFlight(callback)) continue;
      const error =
        culprit && callback === running
          ? culpritError(exit, `${callback.script}: ${describeCall(callback)}`, { script: callback.script })
          : new HookboxError(
              "SANDBOX_CRASHED",
              `${callback.script}: ${describeCall(callback)} failed closed: its sandbox worker was lost (${exit.detail})`,
              { script: callback.script },
            );
      this.callbacks.fail(callback, error);
    }
  }

  onWorkerRetiring(worker: WorkerProcess): void {
    if (this.placement.worker === worker && this.callbacks.size === 0 && this.gate.idle) this.placement.leave();
  }

  /** Evictable: disposes the isolate (a process-per-tenant worker exits) unless a callback is in flight or queued. */
  evictIfIdle(): boolean {
    if (!this.gate.idle || this.gate.waiting > 0 || this.callbacks.size > 0) return false;
    this.placement.leave();
    return true;
  }

  /** Leaves the worker: the isolate there is disposed (pool.drop). */
  release(): void {
    this.placement.leave();
  }

  /** GateOwner: the worker for the tenant's next message. */
  workerForNext(): WorkerProcess {
    return this.placement.workerForNext();
  }

  /** GateOwner: whether another message may follow those in flight to `worker`. */
  mayPipelineTo(worker: WorkerProcess): boolean {
    return this.placement.mayPipelineTo(worker);
  }

  /** GateOwner: a reply came back. A callback's message (its call or a resume) is charged to its run here, not by a promise of its own. */
  onDone(done: DoneMessage, call?: Callback): void {
    call?.run.charge(done);
    this.dispatch.onDone(done, call);
  }

  /** GateOwner: a message to `worker` ended. */
  onReleased(worker: WorkerProcess): void {
    this.placement.messageEnded(worker);
    this.leaveIfIdle();
  }

  /** A tenant leaves a retiring worker (or a normal one, once quarantined) as soon as nothing of it runs there. */
  private leaveIfIdle(): void {
    if (this.callbacks.size === 0 && this.gate.idle) this.placement.moveIfDue();
  }

  /** Built once per `limits` object (pool.tenant() replaces it, never mutates it): this is on every call's path. */
  private workerLimits(): WorkerLimits {
    if (this.sentLimits?.from !== this.limits) {
      this.sentLimits = {
        from: this.limits,
        value: {
          ...this.limits,
          maxPayloadBytes: this.options.maxPayloadBytes,
          maxLogChars: this.options.maxLogChars,
          logsPerSecond: this.options.logsPerSecond,
        },
      };
    }
    return this.sentLimits.value;
  }
  private sentLimits: { from: SandboxLimits; value: WorkerLimits } | undefined;

  /** Longest one segment may run inside the worker before its own timeout fires. */
  private segmentBudgetMs(): number {
    return Math.min(this.limits.cpuMs, this.limits.wallMs);
  }
}
