import { AsyncLocalStorage } from "node:async_hooks";
import { HookboxError, isHookboxError, type SerializedError } from "../errors.js";
import type { ScriptManifest, ScriptSource, SandboxLimits, SandboxRun, TenantSandbox, LogEntry } from "./api.js";
import { bundleScript, type Bundle } from "./bundler.js";
import { encodeCallArgs, LazyResult, type CallReply } from "./call-args.js";
import { describeCall, reviveCallError, reviveLoadError } from "./call-errors.js";
import { validateManifest } from "./manifest.js";
import type { CallKind, DoneMessage, WorkerLimits } from "./protocol.js";
import { SandboxRunImpl } from "./sandbox-run.js";
import type { Supervisor } from "./supervisor.js";
import type { WorkerExit, WorkerProcess } from "./worker-process.js";

export interface TenantOptions {
  supervisor: Supervisor;
  maxQueueDepth: number;
  maxNestingDepth: number;
  maxPayloadBytes: number;
  maxLogChars: number;
  logsPerSecond: number;
}

/** How deep the current host call chain is nested in sandbox callbacks (middleware -> next -> middleware...). */
const chain = new AsyncLocalStorage<{ depth: number }>();
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

interface Task {
  /** The call this message belongs to; a task of a call that already ended is skipped. */
  call?: HostCall;
  /** A call's first message: if its worker dies before starting it, it can be sent again elsewhere. */
  retryable?: boolean;
  send: (worker: WorkerProcess) => Promise<DoneMessage>;
  fail: (error: HookboxError) => void;
}

/**
 * One tenant's sandbox, host side. Holds the tenant's bundles (so a replaced worker can be refilled) and
 * the callback gate: at most one message that runs this tenant's code is at its worker at a time, so
 * callbacks run one at a time, in order. A callback awaiting the host (middleware `next()`) does not hold
 * the gate: the calls its chain makes are served, and so are calls queued behind it.
 */
export class TenantSandboxImpl implements TenantSandbox {
  limits: SandboxLimits;
  private worker: WorkerProcess | undefined;
  private quarantined = false;
  private busy = false;
  private readonly queue: Task[] = [];
  private readonly active = new Map<number, HostCall>();
  readonly scripts = new Map<string, { manifest: ScriptManifest; bundle: Bundle }>();

  constructor(
    readonly tenant: string,
    limits: SandboxLimits,
    private readonly options: TenantOptions,
  ) {
    this.limits = limits;
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
        this.enqueue({
          send: async (worker) => {
            worker.ensureBundle(bundle);
            const done = await worker.run(
              { type: "load", tenant: this.tenant, limits: this.workerLimits(), bundleHash: bundle.hash },
              this.segmentBudgetMs(),
            );
            this.afterDone(done);
            if (done.load?.ok) resolve(validateManifest(done.load.manifest, bundle));
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

  async openRun(options: { runId: string; scripts: ScriptManifest[]; onLog?: (entry: LogEntry) => void }): Promise<SandboxRun> {
    for (const manifest of options.scripts) {
      const entry = this.scripts.get(manifest.name);
      if (entry === undefined || entry.manifest.bundleHash !== manifest.bundleHash) {
        throw new HookboxError("SCRIPT_LOAD", `script "${manifest.name}" is not loaded in tenant ${this.tenant}`);
      }
    }
    return new SandboxRunImpl(this, options.runId, options.scripts, options.onLog);
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
    const encoded = encodeCallArgs(kind, args);
    if (encoded.bytes > this.options.maxPayloadBytes) {
      return Promise.reject(
        new HookboxError(
          "SANDBOX_OVERLOADED",
          `${script}: ${kind} ${target}: payload of ${encoded.bytes} bytes exceeds the ${this.options.maxPayloadBytes}-byte limit`,
        ),
      );
    }
    const depth = chain.getStore()?.depth ?? 0;
    if (depth >= this.options.maxNestingDepth) {
      return Promise.reject(
        new HookboxError(
          "SANDBOX_OVERLOADED",
          `${script}: ${kind} ${target}: sandbox calls nested ${depth} deep (limit ${this.options.maxNestingDepth})`,
        ),
      );
    }
    if (this.queue.length >= this.options.maxQueueDepth) {
      return Promise.reject(
        new HookboxError(
          "SANDBOX_OVERLOADED",
          `tenant ${this.tenant}: ${this.queue.length} callbacks are already waiting (limit ${this.options.maxQueueDepth}); refusing ${script}: ${kind} ${target}`,
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
      if (lazy !== undefined && this.passesThrough.has(`${script}\0${target}`)) {
        // This hook returned the last big result untouched: parse this one while the host waits anyway.
        setImmediate(() => {
          if (!call.finished) lazy.prefetch();
        });
      }
      this.active.set(call.callId, call);
      this.enqueue({
        call,
        retryable: true,
        send: (worker) => {
          call.worker = worker;
          worker.ensureBundle(entry.bundle);
          return worker.run(
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
    const culprit = exit.reason === "killed-overdue" && exit.overdueTenant === this.tenant;
    if (culprit) this.quarantined = true;
    for (const call of [...this.active.values()]) {
      if (call.worker !== worker) continue;
      // The in-flight first message of a call is settled by its own rejection (it may be retried).
      if (this.inFlightTask?.retryable && this.inFlightTask.call === call) continue;
      const overdue = culprit && call === this.inFlight;
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

  private inFlight: HostCall | undefined;
  private inFlightTask: Task | undefined;

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

  private enqueue(task: Task, front = false): void {
    if (front) this.queue.unshift(task);
    else this.queue.push(task);
    this.pump();
  }

  private pump(): void {
    while (!this.busy) {
      const task = this.queue.shift();
      if (task === undefined) return;
      if (task.call?.finished) continue;
      let worker: WorkerProcess;
      try {
        worker = this.ensureWorker();
      } catch (error) {
        task.fail(new HookboxError("SANDBOX_CRASHED", `tenant ${this.tenant}: no sandbox worker: ${(error as Error).message}`));
        continue;
      }
      this.busy = true;
      this.inFlight = task.call;
      this.inFlightTask = task;
      const release = () => {
        this.busy = false;
        this.inFlight = undefined;
        this.inFlightTask = undefined;
        this.options.supervisor.checkBudget(worker);
        this.leaveIfIdleAndMoving();
        this.pump();
      };
      task.send(worker).then(
        (done) => {
          try {
            this.afterDone(done);
          } finally {
            release();
          }
        },
        (error: unknown) => {
          try {
            const hookboxError = isHookboxError(error) ? error : new HookboxError("SANDBOX_CRASHED", String(error));
            if (task.retryable && task.call !== undefined && hookboxError.details.started === false && !task.call.finished) {
              // Its worker died (another tenant's fault) before running it: nothing ran, send it again.
              task.call.worker = undefined;
              this.queue.unshift(task);
              return;
            }
            task.fail(hookboxError);
          } finally {
            release();
          }
        },
      );
    }
  }

  private ensureWorker(): WorkerProcess {
    const current = this.worker;
    if (current !== undefined && current.alive) {
      const shouldMove = current.retiring || (this.quarantined && current.role !== "quarantine");
      if (!shouldMove) return current;
      const idle = this.active.size === 0 || [...this.active.values()].every((call) => call.worker === undefined);
      if (!idle) return current;
      this.detach();
    }
    this.worker = this.options.supervisor.assign(this.tenant, this.quarantined);
    return this.worker;
  }

  private detach(): void {
    const worker = this.worker;
    if (worker === undefined) return;
    this.worker = undefined;
    worker.send({ type: "drop-tenant", tenant: this.tenant });
    this.options.supervisor.release(this.tenant, worker);
  }

  private afterDone(done: DoneMessage): void {
    if (done.breach !== undefined) this.quarantined = true;
    for (const log of done.logs) {
      this.runLogs(log.runId)?.({ script: log.script, tenant: log.tenant, level: log.level, message: log.message });
    }
    for (const outcome of done.outcomes) {
      const call = this.active.get(outcome.callId);
      if (call === undefined) continue;
      if (outcome.type === "settled") this.settle(call, outcome.value, outcome.lazyKey);
      else if (outcome.type === "failed") this.finish(call, undefined, reviveCallError(outcome.error, call));
      else this.serveRequest(call, outcome.requestId, outcome.value);
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

  /** The callback awaits next(): run it on the host, inside the caller's chain, and resume with the result. */
  private serveRequest(call: HostCall, requestId: number, turnText: string): void {
    const resume = (ok: boolean, value: string) =>
      this.enqueue(
        {
          call,
          send: (worker) => {
            if (worker !== call.worker) throw new HookboxError("SANDBOX_CRASHED", "the sandbox worker changed under an awaiting callback");
            return worker.run({ type: "resume", tenant: this.tenant, callId: call.callId, requestId, ok, value }, this.segmentBudgetMs());
          },
          fail: (error) => this.finish(call, undefined, error),
        },
        true,
      );
    const next = call.next;
    if (next === undefined) {
      resume(false, JSON.stringify({ code: "SCRIPT_ERROR", message: "this callback cannot call next()" }));
      return;
    }
    chain
      .run({ depth: call.depth + 1 }, () => next(turnText))
      .then(
        (text) => {
          if (text.length > this.options.maxPayloadBytes)
            resume(
              false,
              JSON.stringify({
                code: "SANDBOX_OVERLOADED",
                message: `the turn from next() exceeds the ${this.options.maxPayloadBytes}-byte limit`,
              }),
            );
          else resume(true, text);
        },
        (error: unknown) => {
          const serialized: SerializedError = isHookboxError(error)
            ? { code: error.code, message: error.message }
            : { code: "MIDDLEWARE", message: (error as Error)?.message ?? String(error) };
          resume(false, JSON.stringify({ code: serialized.code, message: serialized.message }));
        },
      );
  }

  /** Scripts' callbacks (script NUL target) that returned their last big result untouched. */
  private readonly passesThrough = new Set<string>();

  private settle(call: HostCall, text: string, lazyKey: string | undefined): void {
    if (call.lazy !== undefined) {
      const key = `${call.script}\0${call.target}`;
      if (lazyKey === undefined) this.passesThrough.delete(key);
      else this.passesThrough.add(key);
    }
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
    if (!this.busy) this.leaveIfIdleAndMoving();
  }

  /** A tenant leaves a retiring worker (or a normal one, once quarantined) as soon as nothing of it runs there. */
  private leaveIfIdleAndMoving(): void {
    const worker = this.worker;
    if (worker === undefined || this.active.size > 0) return;
    if (worker.retiring || (this.quarantined && worker.role !== "quarantine")) this.detach();
  }
}
