import type { ChildProcess } from "node:child_process";
import { setPriority } from "node:os";
import { dirname, join } from "node:path";
import type { Socket } from "node:net";
import { HookboxError } from "../errors.js";
import { encodeFrame, FrameReader, socketFd, writeFrame } from "./wire/framing.js";
import { PollPolicy } from "./wire/poll-policy.js";
import { checkWorkerMessage } from "./worker-messages.js";
import { expectReply, REPLY_SPIN_MS, stopAwaiting, type AwaitedPipe } from "./reply-wait.js";
import type {
  BundleMessage,
  CloseRunMessage,
  DoneMessage,
  DropTenantMessage,
  ExecMessage,
  WorkerLimits,
  WorkerMessage,
} from "./wire/protocol.js";
import type { Launcher } from "./wall/launcher.js";

export type WorkerRole = "normal" | "quarantine";

/** Why a worker went away; `overdueSeq` names the exec message the watchdog gave up on. */
export interface WorkerExit {
  reason: "killed-overdue" | "crashed" | "retired" | "closed";
  overdueSeq?: number;
  overdueTenant?: string;
  detail: string;
}

interface PendingExec {
  seq: number;
  tenant: string;
  budgetMs: number;
  sentAt: number;
  resolve: (done: DoneMessage) => void;
  reject: (error: HookboxError) => void;
}

type ExecMessageBody = ExecMessage extends infer M ? (M extends ExecMessage ? Omit<M, "seq"> : never) : never;

export interface WorkerProcessOptions {
  path: string;
  /** Starts the process: inside the second wall, or not (wall/mode.ts). */
  launcher: Launcher;
  role: WorkerRole;
  graceMs: number;
  /** Largest frame the worker may send: a bigger one breaks the protocol. */
  maxFrameBytes: number;
  onExit: (worker: WorkerProcess, exit: WorkerExit) => void;
}

/** The only variables a walled worker gets: its tuning knob, when the host sets it. */
function workerEnv(): Record<string, string> {
  const poll = process.env.HOOKBOX_WORKER_POLL_US;
  return poll === undefined ? {} : { HOOKBOX_WORKER_POLL_US: poll };
}

/**
 * Host-side handle of one sandbox worker process. Exec messages are answered in order, so only the head
 * of the line needs a watchdog: its clock starts when the worker could start it (sent, and the previous
 * reply received). A reply overdue by its budget plus grace means guest code escaped every in-worker
 * bound (a long built-in, a getter surviving dispose): the process is SIGKILLed.
 */
export class WorkerProcess {
  readonly role: WorkerRole;
  readonly child: ChildProcess;
  /** Protocol frames both ways (wire/framing.ts); the IPC channel only tells the worker that we are gone. */
  private readonly pipe: Socket;
  readonly tenants = new Set<string>();
  readonly bundles = new Set<string>();
  alive = true;
  /**
   * Settles once this worker is gone, whenever that was: made at spawn and settled in its own exit handling,
   * so a caller that starts waiting after the exit (or after a spawn that never produced a process, which
   * emits `error` and no `exit`) does not wait forever.
   */
  readonly exited: Promise<void>;
  private settleExited!: () => void;
  retiring = false;
  lastRssBytes = 0;
  /** Tenant isolates the worker reported holding with its last reply. */
  lastIsolates = 0;
  /** Diagnostics: time the worker reported spending on replies, and how many. */
  workerMsTotal = 0;
  replies = 0;
  private ready = false;
  private nextSeq = 1;
  private readonly queue: PendingExec[] = [];
  /** The limits object last sent per tenant (tenants' limits objects are replaced, never mutated). */
  private readonly limitsSent = new Map<string, WorkerLimits>();
  private headClockFrom = 0;
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires, and when the head of the line is overdue (Infinity: nothing watched). */
  private timerAt = Infinity;
  private headDeadline = Infinity;
  private exit: WorkerExit | undefined;
  private stderrTail = "";
  /** This worker's pipe as the host reads it while a reply is due (reply-wait.ts), and whether to. */
  private readonly awaitedPipe: AwaitedPipe;
  private readonly replyPolling = new PollPolicy(REPLY_SPIN_MS);
  private readonly reader: FrameReader;

  constructor(private readonly options: WorkerProcessOptions) {
    this.role = options.role;
    this.exited = new Promise<void>((resolve) => (this.settleExited = resolve));
    this.child = options.launcher.launch({
      entry: options.path,
      reads: [join(dirname(options.path), "runtime.js")],
      // HOOKBOX_WORKER_EXEC_ARGV: extra node flags for profiling workers (e.g. "--cpu-prof"; needs --wall none to write).
      nodeArgs: ["--no-node-snapshot", ...(process.env.HOOKBOX_WORKER_EXEC_ARGV?.split(" ").filter(Boolean) ?? [])],
      serialization: "json",
      stdio: ["ignore", "ignore", "pipe", "ipc", "pipe"],
      env: workerEnv(),
    });
    this.pipe = this.child.stdio[4] as Socket;
    // Niced before it starts its threads (they inherit it): bwrap's sandbox processes inherit it from bwrap.
    if (this.role === "quarantine") this.lowerPriority(this.child.pid);
    this.child.stderr?.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-2000);
    });
    const reader = new FrameReader((message) => this.onFrame(message), {
      maxFrameBytes: options.maxFrameBytes,
      onViolation: (reason) => this.brokeProtocol(reason),
    });
    this.reader = reader;
    this.pipe.on("data", (chunk: Buffer) => reader.push(chunk));
    this.awaitedPipe = {
      fd: () => socketFd(this.pipe),
      push: (chunk) => reader.push(chunk),
    };
    this.pipe.on("error", () => this.kill({ reason: "crashed", detail: "worker pipe error" }));
    this.child.on("exit", (code, signal) => this.onChildExit(code, signal));
    this.child.on("error", (error) => {
      this.kill({ reason: "crashed", detail: `worker process error: ${error.message}` });
      // A process that never spawned has no pid and emits no `exit`: this error is its exit.
      if (this.child.pid === undefined) this.onChildExit(null, null);
    });
    this.setBusy(false);
  }

  /** Idle workers must not keep the host process alive; busy ones must (a reply is awaited). */
  private setBusy(busy: boolean): void {
    const channel = (this.child as unknown as { channel?: { ref(): void; unref(): void } }).channel;
    if (busy) {
      this.child.ref();
      channel?.ref();
      this.pipe.ref();
    } else {
      this.child.unref();
      channel?.unref();
      this.pipe.unref();
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get inFlight(): number {
    return this.queue.length;
  }

  send(message: BundleMessage | CloseRunMessage | DropTenantMessage): void {
    if (!this.alive) return;
    if (message.type === "drop-tenant") this.limitsSent.delete(message.tenant);
    writeFrame(this.pipe, encodeFrame(message));
  }

  ensureBundle(bundle: { hash: string; code: string; filename: string }): void {
    if (this.bundles.has(bundle.hash)) return;
    this.bundles.add(bundle.hash);
    this.send({ type: "bundle", hash: bundle.hash, code: bundle.code, filename: bundle.filename });
  }

  /** Sends a message that runs guest code; resolves with its `done` reply, rejects if the worker is lost. */
  exec(body: ExecMessageBody, budgetMs: number): Promise<DoneMessage> {
    if (!this.alive) return Promise.reject(this.lostError());
    const seq = this.nextSeq++;
    // Callers build a fresh body for every message: it becomes the message.
    const message = Object.assign(body, { seq }) as ExecMessage;
    if (message.type !== "resume") {
      // The worker keeps each tenant's limits: resend them only when they changed (undefined is not encoded).
      if (this.limitsSent.get(message.tenant) === message.limits) message.limits = undefined;
      else if (message.limits !== undefined) this.limitsSent.set(message.tenant, message.limits);
    }
    return new Promise<DoneMessage>((resolve, reject) => {
      const pending: PendingExec = { seq, tenant: body.tenant, budgetMs, sentAt: performance.now(), resolve, reject };
      this.queue.push(pending);
      if (this.queue.length === 1) this.setBusy(true);
      writeFrame(this.pipe, encodeFrame(message));
      expectReply(this.awaitedPipe, this.replyPolling.beginWait());
      if (this.queue.length === 1) this.startHeadClock(pending.sentAt);
    });
  }

  kill(exit: WorkerExit): void {
    if (this.exit === undefined) this.exit = exit;
    // A child whose spawn failed has no pid; signalling it could reach kill(0), which is our whole process group.
    if (this.alive && this.child.pid !== undefined) this.options.launcher.kill(this.child);
  }

  /** Every frame from the worker is checked before the host acts on it (worker-messages.ts). */
  private onFrame(frame: unknown): void {
    if (!this.alive) return;
    const checked = checkWorkerMessage(frame);
    if (checked.ok) this.onMessage(checked.message);
    else this.brokeProtocol(`a message the protocol does not allow (${checked.problem})`);
  }

  /** A worker that breaks the protocol runs code that is not ours: it is killed, its calls fail closed. */
  private brokeProtocol(reason: string): void {
    this.reader.stop();
    this.kill({ reason: "crashed", detail: `it broke the protocol: ${reason.slice(0, 300)}` });
  }

  private onMessage(message: WorkerMessage): void {
    if (message.type === "ready") {
      this.ready = true;
      // Inside the wall, in case the sandbox was started before bwrap was niced.
      if (this.role === "quarantine") this.lowerPriority(this.options.launcher.nodePid(this.child));
      if (this.queue.length > 0) this.startHeadClock(performance.now());
      return;
    }
    const head = this.queue[0];
    if (head === undefined || head.seq !== message.seq) {
      this.brokeProtocol(`a reply to message ${message.seq}, ${head === undefined ? "when none was due" : `when ${head.seq} was due`}`);
      return;
    }
    this.queue.shift();
    this.replyPolling.endWait(performance.now() - this.headClockFrom);
    this.lastRssBytes = message.rssBytes;
    this.lastIsolates = message.isolates ?? 0;
    this.workerMsTotal += message.workerMs ?? 0;
    this.replies++;
    if (this.queue.length > 0) this.startHeadClock(performance.now());
    else {
      this.stopClock();
      this.setBusy(false);
      stopAwaiting(this.awaitedPipe);
    }
    head.resolve(message);
  }

  /** Misbehaving tenants live here: let the host and well-behaved workers win the CPU. */
  private lowerPriority(pid: number | undefined): void {
    if (pid === undefined) return;
    try {
      setPriority(pid, 19);
    } catch {
      // not permitted: still isolated by process
    }
  }

  /**
   * Arms the watchdog for the head of the line. One timer is kept armed (unref'd) and re-armed only when
   * it fires early, instead of a clearTimeout + setTimeout per message on the hot path.
   */
  private startHeadClock(from: number): void {
    this.headDeadline = Infinity;
    if (!this.ready) return; // boot time is not the guest's
    const head = this.queue[0];
    if (head === undefined) return;
    this.headClockFrom = Math.max(from, head.sentAt);
    this.headDeadline = this.headClockFrom + head.budgetMs + this.options.graceMs;
    if (this.timerAt > this.headDeadline) this.armTimer(this.headDeadline);
  }

  private armTimer(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.onTimer(), Math.max(0, at - performance.now()));
    this.timer.unref(); // a busy worker's pipe keeps the host alive; an idle one must not
  }

  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const head = this.queue[0];
    if (head === undefined || this.headDeadline === Infinity) return;
    if (performance.now() < this.headDeadline) {
      this.armTimer(this.headDeadline);
      return;
    }
    this.kill({
      reason: "killed-overdue",
      overdueSeq: head.seq,
      overdueTenant: head.tenant,
      detail: `no reply within ${head.budgetMs} ms + ${this.options.graceMs} ms grace`,
    });
  }

  private stopClock(): void {
    this.headDeadline = Infinity;
  }

  private lostError(): HookboxError {
    return new HookboxError("SANDBOX_CRASHED", `sandbox worker ${this.pid ?? "?"} is gone`);
  }

  private onChildExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.alive) return;
    this.alive = false;
    this.settleExited();
    this.stopClock();
    if (this.timer !== undefined) clearTimeout(this.timer);
    const exit: WorkerExit = this.exit ?? {
      reason: "crashed",
      detail: `worker exited (${signal ?? `code ${code}`})${this.stderrTail ? `: ${this.stderrTail.trim().split("\n").slice(-3).join(" | ")}` : ""}`,
    };
    this.exit = exit;
    const pending = this.queue.splice(0);
    stopAwaiting(this.awaitedPipe);
    for (const [index, exec] of pending.entries()) {
      const overdue = exit.reason === "killed-overdue" && exec.seq === exit.overdueSeq;
      // Replies come in order: only the head can have started; the rest never ran any guest code.
      const started = index === 0;
      exec.reject(
        overdue
          ? new HookboxError(
              "SANDBOX_TIMEOUT",
              `guest code did not yield within its limit (${exit.detail}); the sandbox worker was killed`,
              { worker: this.pid, started },
            )
          : new HookboxError("SANDBOX_CRASHED", `sandbox worker was lost (${exit.detail}); the call failed closed`, {
              worker: this.pid,
              started,
            }),
      );
    }
    this.options.onExit(this, exit);
  }
}
