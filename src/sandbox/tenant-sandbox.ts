import { CallbackGate, type GateOwner } from "./callback-gate.js";
import { nestingDepth, runNested, serveCapability, type Resumption } from "./nested-calls.js";
import { HookboxError, isHookboxError } from "../errors.js";
import type { Isolation, LogEntry, OpenRunOptions, ScriptManifest, ScriptSource, SandboxLimits, SandboxRun, TenantSandbox } from "./api.js";
import type { Bundle } from "./bundle-output.js";
import { bundleScript } from "./bundler.js";
import { encodeCallArgs, LazyResult, ResultUse, type CallReply } from "./call-args.js";
import { describeCall, reviveCallError, reviveLoadError } from "./call-errors.js";
import { validateManifest } from "./manifest.js";
import { ToolSchemas } from "../schema/tool-schemas.js";
import type { CallKind, DoneMessage, HostRequestOp, WorkerLimits } from "./wire/protocol.js";
import { SandboxRunImpl, type RunOwner } from "./sandbox-run.js";
import type { Evictable, LiveIsolates } from "./live-isolates.js";
import type { Supervisor } from "./supervisor.js";
import type { WorkerExit, WorkerProcess } from "./worker-process.js";

export interface TenantOptions {
  supervisor: Supervisor;
  /** The pool's live isolates, for idle eviction and the cap. */
  live: LiveIsolates;
  maxQueueDepth: number;
  maxNestingDepth: number;
  maxPayloadBytes: number;
  maxLogChars: number;
  logsPerSecond: number;
}

let lastCallId = 0;

interface HostCall {
  callId: number;
  run: SandboxRunImpl;
  script: string;
  kind: CallKind;
  target: string;
  depth: number;
  worker?: WorkerProcess;
  finished: boolean;
  resolve: (reply: CallReply) => void;
  reject: (error: HookboxError) => void;
  next?: (turnText: string) => Promise<string>;
  /** The payload's `result`, sent apart (call-args.ts), until the call ends. */
  lazy?: LazyResult;
}

/**
 * One tenant's sandbox, host side. Holds the tenant's bundles (so a replaced worker can be refilled), its
 * callbacks in progress and its callback gate (callback-gate.ts). A callback awaiting the host (middleware
 * `next()`) does not hold the gate: the calls its chain makes are served, and so are calls queued behind it.
 */
export class TenantSandboxImpl implements TenantSandbox, GateOwner, Evictable, RunOwner {
  limits: SandboxLimits;
  /** Set by the pool; a change takes effect when nothing of the tenant runs (the tenant moves). */
  isolation: Isolation;
  private worker: WorkerProcess | undefined;
  private quarantined = false;
  private readonly gate = new CallbackGate(this);
  private readonly active = new Map<number, HostCall>();
  readonly scripts = new Map<string, { manifest: ScriptManifest; bundle: Bundle }>();
  /** This tenant's own schema checker: nothing of one tenant's schemas is visible to another's. */
  private readonly schemas = new ToolSchemas();

  constructor(
    readonly tenant: string,
    limits: SandboxLimits,
    isolation: Isolation,
    private readonly options: TenantOptions,
  ) {
    this.limits = limits;
    this.isolation = isolation;
  }

  get isQuarantined(): boolean {
    return this.quarantined;
  }

  get workerPid(): number | undefined {
    return this.worker?.pid;
  }

  async load(sources: ScriptSource[]): Promise<ScriptManifest[]> {
    const bundles = await Promise.all(sources.map((source) => bundleScript(source)));
    const loaded: { manifest: ScriptManifest; bundle: Bundle }[] = [];
    for (const bundle of bundles) {
      const manifest = await new Promise<ScriptManifest>((resolve, reject) => {
        this.gate.enqueue({
          send: async (worker) => {
            worker.ensureBundle(bundle);
            const done = await worker.exec(
              { type: "load", tenant: this.tenant, limits: this.workerLimits(), bundleHash: bundle.hash },
              this.segmentBudgetMs(),
            );
            this.onDone(done);
            if (done.load?.ok) resolve(validateManifest(done.load.manifest, bundle, this.schemas));
            else reject(reviveLoadError(done.load?.error ?? { code: "SCRIPT_LOAD", message: "load failed" }, bundle.displayPath));
            return done;
          },
          fail: (error) => reject(new HookboxError("SCRIPT_LOAD", `${bundle.displayPath}: ${error.message}`, { cause: error.code })),
        });
      }).catch((error: unknown) => {
        if (isHookboxError(error) && error.code === "SCRIPT_LOAD") throw error;
        throw new HookboxError("SCRIPT_LOAD", `${bundle.displayPath}: ${(error as Error).message}`, {
          cause: (error as HookboxError).code,
        });
      });
      loaded.push({ manifest, bundle });
    }
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

  async openRun(options: OpenRunOptions): Promise<SandboxRun> {
    for (const manifest of options.scripts) {
      const entry = this.scripts.get(manifest.name);
      if (entry === undefined || entry.manifest.bundleHash !== manifest.bundleHash) {
        throw new HookboxError("SCRIPT_LOAD", `script "${manifest.name}" is not loaded in tenant ${this.tenant}`);
      }
    }
    return new SandboxRunImpl(this, options.runId, options.scripts, options.onLog, options.capabilities);
  }

  /** Runs one callback; resolves with what it returned (replyValue() makes it a value). */
  call(
    run: SandboxRunImpl,
    script: string,
    kind: CallKind,
    target: string,
    args: unknown[],
    next?: (turnText: string) => Promise<string>,
  ): Promise<CallReply> {
    const entry = this.scripts.get(script);
    if (entry === undefined)
      return Promise.reject(new HookboxError("SCRIPT_ERROR", `script "${script}" is not loaded in tenant ${this.tenant}`));
    const plan = kind === "hook" ? this.resultUse.plan(script, target) : undefined;
    const encoded = encodeCallArgs(kind, args, plan?.lazy);
    if (encoded.bytes > this.options.maxPayloadBytes) {
      return Promise.reject(
        new HookboxError(
          "SANDBOX_OVERLOADED",
          `${script}: ${kind} ${target}: payload of ${encoded.bytes} bytes exceeds the ${this.options.maxPayloadBytes}-byte limit`,
        ),
      );
    }
    const depth = nestingDepth();
    if (depth >= this.options.maxNestingDepth) {
      return Promise.reject(
        new HookboxError(
          "SANDBOX_OVERLOADED",
          `${script}: ${kind} ${target}: sandbox calls nested ${depth} deep (limit ${this.options.maxNestingDepth})`,
        ),
      );
    }
    if (this.gate.waiting >= this.options.maxQueueDepth) {
      return Promise.reject(
        new HookboxError(
          "SANDBOX_OVERLOADED",
          `tenant ${this.tenant}: ${this.gate.waiting} callbacks are already waiting (limit ${this.options.maxQueueDepth}); refusing ${script}: ${kind} ${target}`,
        ),
      );
    }
    return new Promise<CallReply>((resolve, reject) => {
      const lazy = encoded.lazy === undefined ? undefined : new LazyResult(encoded.lazy);
      const call: HostCall = {
        callId: ++lastCallId,
        run,
        script,
        kind,
        target,
        depth,
        finished: false,
        resolve,
        reject,
        next,
        lazy,
      };
      if (lazy !== undefined && plan?.prefetch) {
        // This hook returned the last big result untouched: parse this one while the host waits anyway.
        setImmediate(() => {
          if (!call.finished) lazy.prefetch();
        });
      }
      this.active.set(call.callId, call);
      this.gate.enqueue({
        call,
        retryable: true,
        send: (worker) => {
          call.worker = worker;
          worker.ensureBundle(entry.bundle);
          return run.charged(
            worker.exec(
              {
                type: "call",
                tenant: this.tenant,
                limits: this.workerLimits(),
                runId: run.runId,
                script,
                bundleHash: entry.bundle.hash,
                callId: call.callId,
                kind,
                target,
                args: encoded.args,
                lazy: encoded.lazy,
              },
              2 * this.segmentBudgetMs(),
            ),
          );
        },
        fail: (error) => this.finish(call, undefined, error),
      });
    });
  }

  closeRun(runId: string): void {
    for (const call of this.active.values()) {
      if (call.run.runId === runId)
        this.finish(
          call,
          undefined,
          new HookboxError("CANCELLED", `${call.script}: ${describeCall(call)} was cancelled: the run was closed`),
        );
    }
    this.worker?.send({ type: "close-run", tenant: this.tenant, runId });
  }

  /** The supervisor lost a worker: every callback of ours on it fails closed. */
  onWorkerLost(worker: WorkerProcess, exit: WorkerExit): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.options.live.forget(this);
    const culprit = exit.reason === "killed-overdue" && exit.overdueTenant === this.tenant;
    if (culprit) this.quarantined = true;
    for (const call of [...this.active.values()]) {
      if (call.worker !== worker) continue;
      // The in-flight first message of a call is settled by its own rejection (it may be retried).
      const inFlight = this.gate.inFlight;
      if (inFlight?.retryable && inFlight.call === call) continue;
      const overdue = culprit && call === inFlight?.call;
      const error = overdue
        ? new HookboxError(
            "SANDBOX_TIMEOUT",
            `${call.script}: ${describeCall(call)} did not yield within its limits (${exit.detail}); its sandbox worker was killed`,
            { script: call.script },
          )
        : new HookboxError(
            "SANDBOX_CRASHED",
            `${call.script}: ${describeCall(call)} failed closed: its sandbox worker was lost (${exit.detail})`,
            { script: call.script },
          );
      this.finish(call, undefined, error);
    }
  }

  onWorkerRetiring(worker: WorkerProcess): void {
    if (this.worker === worker && this.active.size === 0) this.detach();
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

  /** GateOwner: the tenant's worker, or a new assignment when it should move and nothing of it runs there. */
  workerForNext(): WorkerProcess {
    const current = this.worker;
    if (current !== undefined && current.alive) {
      if (!this.shouldMove(current)) return this.used(current);
      const idle = this.active.size === 0 || [...this.active.values()].every((call) => call.worker === undefined);
      if (!idle) return this.used(current);
      this.detach();
    }
    this.worker = this.options.supervisor.assign(this.tenant, { quarantined: this.quarantined, isolation: this.isolation });
    return this.used(this.worker);
  }

  private used(worker: WorkerProcess): WorkerProcess {
    this.options.live.touch(this);
    return worker;
  }

  /** Retiring workers are left; so are shared ones once quarantined, and workers of the other isolation mode. */
  private shouldMove(worker: WorkerProcess): boolean {
    if (worker.retiring || (this.quarantined && worker.role !== "quarantine")) return true;
    return this.options.supervisor.isDedicated(worker) !== (this.isolation === "process-per-tenant");
  }

  /** Evictable: disposes the isolate (a process-per-tenant worker exits) unless a callback is in flight or queued. */
  evictIfIdle(): boolean {
    if (!this.gate.isOpen || this.gate.waiting > 0 || this.active.size > 0) return false;
    this.detach();
    return true;
  }

  /** Leaves the worker: the isolate there is disposed (pool.drop). */
  release(): void {
    this.detach();
  }

  private detach(): void {
    const worker = this.worker;
    if (worker === undefined) return;
    this.worker = undefined;
    this.options.live.forget(this);
    worker.send({ type: "drop-tenant", tenant: this.tenant });
    this.options.supervisor.release(this.tenant, worker);
  }

  /** GateOwner: a reply came back. */
  onDone(done: DoneMessage): void {
    if (done.breach !== undefined) this.quarantined = true;
    for (const log of done.logs) {
      this.runLogs(log.runId)?.({ script: log.script, tenant: log.tenant, level: log.level, message: log.message });
    }
    for (const outcome of done.outcomes) {
      const call = this.active.get(outcome.callId);
      if (call === undefined) continue;
      if (outcome.type === "settled") this.settle(call, outcome.value, outcome.lazyKey);
      else if (outcome.type === "failed") this.finish(call, undefined, reviveCallError(outcome.error, call));
      else this.serveRequest(call, outcome.requestId, outcome.op, outcome.value);
    }
  }

  private readonly runs = new Map<string, SandboxRunImpl>();

  registerRun(run: SandboxRunImpl): void {
    this.runs.set(run.runId, run);
  }

  unregisterRun(run: SandboxRunImpl): void {
    if (this.runs.get(run.runId) === run) this.runs.delete(run.runId);
  }

  private runLogs(runId: string): ((entry: LogEntry) => void) | undefined {
    return this.runs.get(runId)?.onLog;
  }

  /**
   * The callback awaits the host: next() runs inside the caller's chain, a capability request goes to the
   * run's broker. Either way the callback does not hold the gate meanwhile, and is resumed with the result.
   */
  private serveRequest(call: HostCall, requestId: number, op: HostRequestOp, text: string): void {
    const answer: Promise<Resumption> =
      op === "capability"
        ? serveCapability(call.run.capabilities, { script: call.script, text }, this.options.maxPayloadBytes)
        : runNested(call.next, text, call.depth, this.options.maxPayloadBytes);
    void answer.then(({ ok, value }) =>
      this.gate.enqueue(
        {
          call,
          send: (worker) => {
            if (worker !== call.worker) throw new HookboxError("SANDBOX_CRASHED", "the sandbox worker changed under an awaiting callback");
            return call.run.charged(
              worker.exec({ type: "resume", tenant: this.tenant, callId: call.callId, requestId, op, ok, value }, this.segmentBudgetMs()),
            );
          },
          fail: (error) => this.finish(call, undefined, error),
        },
        true,
      ),
    );
  }

  /** How each hook used its big results: decides how the next one travels (call-args.ts). */
  private readonly resultUse = new ResultUse();

  private settle(call: HostCall, text: string, lazyKey: string | undefined): void {
    if (call.lazy !== undefined) this.resultUse.record(call.script, call.target, text, lazyKey !== undefined);
    if (lazyKey === undefined) this.finish(call, { text });
    else if (call.lazy !== undefined && text.startsWith("{"))
      this.finish(call, { text, restore: { key: lazyKey, value: call.lazy.value() } });
    else
      this.finish(
        call,
        undefined,
        new HookboxError("SANDBOX_CRASHED", `${call.script}: ${describeCall(call)}: the sandbox returned a broken value`),
      );
  }

  private finish(call: HostCall, reply: CallReply | undefined, error?: HookboxError): void {
    if (call.finished) return;
    call.finished = true;
    call.lazy = undefined;
    this.active.delete(call.callId);
    if (error !== undefined) call.reject(error);
    else call.resolve(reply ?? { text: "" });
    if (this.gate.isOpen) this.leaveIfIdleAndMoving();
  }

  /** GateOwner: the gate opened again after a message to `worker`. */
  onReleased(worker: WorkerProcess): void {
    this.options.supervisor.checkBudget(worker);
    // The idle clock starts when a message ends, not when it started.
    if (this.worker === worker) this.options.live.touch(this);
    this.leaveIfIdleAndMoving();
  }

  /** A tenant leaves a retiring worker (or a normal one, once quarantined) as soon as nothing of it runs there. */
  private leaveIfIdleAndMoving(): void {
    const worker = this.worker;
    if (worker === undefined || this.active.size > 0) return;
    if (this.shouldMove(worker)) this.detach();
  }
}
