import type { ChildProcess } from "node:child_process";
import { setPriority } from "node:os";
import { dirname, join } from "node:path";
import type { Socket } from "node:net";
import { HookboxError } from "../errors.js";
import { encodeFrame, FrameReader, socketFd, writeFrame } from "./wire/framing.js";
import { PollPolicy } from "./wire/poll-policy.js";
import { checkWorkerMessage } from "./worker-messages.js";
import { MAX_WORKER_PROCESSES, MemoryWatch, type MemorySample } from "./worker-memory.js";
import { WorkerOutput } from "./worker-output.js";
import { lostExecError, type WorkerExit } from "./worker-exit.js";
import { ReplyDeadline } from "./reply-deadline.js";
import { expectReply, REPLY_MAX_SKIPPED_WAITS, REPLY_SPIN_MS, replyArrived, stopAwaiting, type AwaitedPipe } from "./reply-wait.js";
import {
  isStop,
  type BundleMessage,
  type CloseRunMessage,
  type DoneMessage,
  type DropTenantMessage,
  type ExecMessage,
  type WorkerLimits,
  type WorkerMessage,
} from "./wire/protocol.js";
import type { Launcher } from "./wall/launcher.js";

export type WorkerRole = "normal" | "quarantine";

interface PendingExec {
  seq: number;
  tenant: string;
  budgetMs: number;
  sentAt: number;
  /** The tenant's stops here the host had seen when it sent the message (a refusal must be behind a later one). */
  stops: number;
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
  /** How long the worker may take to say `ready` while a message waits for it; then it is killed. */
  bootLimitMs: number;
  /** Largest frame the worker may send: a bigger one breaks the protocol. */
  maxFrameBytes: number;
  /** The worker's processes holding more than this while a message runs kill it, blaming that message. */
  memoryLimitBytes: number;
  /** How often the host measures the worker's memory while it works (worker-memory.ts). */
  memorySampleMs: number;
  /** A memory sample was taken while the worker worked (the supervisor checks its budget). */
  onMemorySample: (worker: WorkerProcess) => void;
  /** The process's memory ceiling inside the wall (its cgroup's, where the host can make one). */
  memoryBytes: number;
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
  /** Protocol frames both ways (wire/framing.ts), the worker's fd 3: its only channel to the host. */
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
  /** Tenant isolates the worker reported holding with its last reply. */
  lastIsolates = 0;
  /** Diagnostics: time the worker reported spending on replies, and how many. */
  workerMsTotal = 0;
  replies = 0;
  private ready = false;
  private readonly startedAt = performance.now();
  private nextSeq = 1;
  private readonly queue: PendingExec[] = [];
  /** The limits object last sent per tenant (tenants' limits objects are replaced, never mutated). */
  private readonly limitsSent = new Map<string, WorkerLimits>();
  /** Stops per tenant (breaches, long segments) in this worker's replies (exec messages carry the count: wire/protocol.ts). */
  private readonly stopsSeen = new Map<string, number>();
  /** Frames not yet written: those sent in one tick go in one write (flushed in a microtask). */
  private outgoing: Buffer[] = [];
  private readonly deadline = new ReplyDeadline(() => this.overdue());
  private exit: WorkerExit | undefined;
  /** stdout and stderr, read with a cap (worker-output.ts). */
  private readonly output: WorkerOutput;
  /** The host's own measure of the worker's memory (undefined when the process never started). */
  private readonly memory: MemoryWatch | undefined;
  /** This worker's pipe as the host reads it while a reply is due (reply-wait.ts), and whether to. */
  private readonly awaitedPipe: AwaitedPipe;
  private readonly reader: FrameReader;

  constructor(private readonly options: WorkerProcessOptions) {
    this.role = options.role;
    this.exited = new Promise<void>((resolve) => (this.settleExited = resolve));
    this.child = options.launcher.launch({
      entry: options.path,
      reads: [join(dirname(options.path), "runtime.js")],
      // HOOKBOX_WORKER_EXEC_ARGV: extra node flags for profiling workers (e.g. "--cpu-prof"; needs --wall none to write).
      nodeArgs: ["--no-node-snapshot", ...(process.env.HOOKBOX_WORKER_EXEC_ARGV?.split(" ").filter(Boolean) ?? [])],
      // No IPC channel: the frame pipe is the only way in or out, and its end tells the worker we are gone.
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      socketOnInheritedFd: true,
      env: workerEnv(),
      resources: { memoryBytes: options.memoryBytes },
    });
    this.pipe = this.child.stdio[3] as Socket;
    // Niced before it starts its threads (they inherit it): bwrap's sandbox processes inherit it from bwrap.
    if (this.role === "quarantine") this.lowerPriority(this.child.pid);
    this.output = new WorkerOutput(this.child, (reason) => this.brokeProtocol(reason));
    const pid = this.child.pid;
    this.memory =
      pid === undefined
        ? undefined
        : new MemoryWatch({
            pid,
            everyMs: options.memorySampleMs,
            busy: () => this.queue.length > 0,
            onSample: (sample) => this.onMemorySample(sample),
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
      polling: new PollPolicy(REPLY_SPIN_MS, REPLY_MAX_SKIPPED_WAITS),
    };
    this.pipe.on("error", (error) => this.kill({ reason: "crashed", detail: `worker pipe error (${error.message})` }));
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
    if (busy) {
      this.child.ref();
      this.pipe.ref();
    } else {
      this.child.unref();
      this.pipe.unref();
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The resident memory of the worker's processes, as the host measured it (at most memorySampleMs ago). */
  get rssBytes(): number {
    return this.memory?.current().bytes ?? 0;
  }

  get inFlight(): number {
    return this.queue.length;
  }

  send(message: BundleMessage | CloseRunMessage | DropTenantMessage): void {
    if (!this.alive) return;
    if (message.type === "drop-tenant") {
      this.limitsSent.delete(message.tenant);
      this.stopsSeen.delete(message.tenant);
    }
    this.write(encodeFrame(message));
  }

  /** Queues a frame; the frames of one tick are written together, in order, after it. */
  private write(frame: Buffer): void {
    this.outgoing.push(frame);
    if (this.outgoing.length === 1) queueMicrotask(() => this.flush());
  }

  private flush(): void {
    const frames = this.outgoing;
    this.outgoing = [];
    if (!this.alive) return;
    writeFrame(this.pipe, frames.length === 1 ? frames[0]! : Buffer.concat(frames));
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
    if (message.type === "load" || message.type === "call") {
      // The worker keeps each tenant's limits: resend them only when they changed (undefined is not encoded).
      if (this.limitsSent.get(message.tenant) === message.limits) message.limits = undefined;
      else if (message.limits !== undefined) this.limitsSent.set(message.tenant, message.limits);
    }
    const stops = this.stopsSeen.get(body.tenant) ?? 0;
    if (stops > 0) message.stops = stops;
    return new Promise<DoneMessage>((resolve, reject) => {
      const pending: PendingExec = { seq, tenant: body.tenant, budgetMs, sentAt: performance.now(), stops, resolve, reject };
      this.queue.push(pending);
      if (this.queue.length === 1) this.setBusy(true);
      this.memory?.sent();
      this.write(encodeFrame(message));
      expectReply(this.awaitedPipe);
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

  /** A worker that breaks the protocol runs code that is not ours: it is killed, its calls fail closed naming `reason`. */
  brokeProtocol(reason: string): void {
    this.reader.stop();
    this.output.stop();
    this.kill({ reason: "crashed", detail: `it broke the protocol: ${reason.slice(0, 300)}` });
  }

  /**
   * The worker says `ready` once, before anything else: one out of that order is a lie like any other (and
   * would restart the head's clock, and walk /proc for a quarantine worker, each time).
   */
  private onMessage(message: WorkerMessage): void {
    if (message.type === "ready") {
      if (this.ready) return this.brokeProtocol("a second ready message");
      this.ready = true;
      // Inside the wall, in case the sandbox was started before bwrap was niced.
      if (this.role === "quarantine") this.lowerPriority(this.options.launcher.nodePid(this.child));
      if (this.queue.length > 0) this.startHeadClock(performance.now());
      return;
    }
    if (!this.ready) return this.brokeProtocol("a reply before its ready message");
    const head = this.queue[0];
    if (head === undefined || head.seq !== message.seq) {
      this.brokeProtocol(`a reply to message ${message.seq}, ${head === undefined ? "when none was due" : `when ${head.seq} was due`}`);
      return;
    }
    const stops = this.stopsSeen.get(head.tenant) ?? 0;
    if (message.refused && head.stops >= stops)
      return this.brokeProtocol(`it refused message ${message.seq}, sent after every stop of tenant ${head.tenant} it reported`);
    if (isStop(message)) this.stopsSeen.set(head.tenant, stops + 1);
    this.queue.shift();
    replyArrived(this.awaitedPipe);
    this.lastIsolates = message.isolates ?? 0;
    this.workerMsTotal += message.workerMs ?? 0;
    this.replies++;
    if (this.queue.length > 0) this.startHeadClock(performance.now());
    else {
      this.deadline.clear();
      this.setBusy(false);
      stopAwaiting(this.awaitedPipe);
    }
    if (message.refused)
      head.reject(
        new HookboxError(
          "SANDBOX_CRASHED",
          `sandbox worker ${this.pid ?? "?"} refused the message: it was sent behind a breach or a long segment`,
          {
            worker: this.pid,
            started: false,
            refused: true,
          },
        ),
      );
    else head.resolve(message);
  }

  /**
   * The memory watchdog's sample. A tree the host cannot measure (too many processes) or one over the limit
   * while a message runs ends the worker; the budget (retirement) is the supervisor's.
   */
  private onMemorySample(sample: MemorySample): void {
    if (!this.alive) return;
    if (sample.processes > MAX_WORKER_PROCESSES) {
      this.output.stop();
      return this.kill({ reason: "crashed", detail: `it runs more than ${MAX_WORKER_PROCESSES} processes` });
    }
    const head = this.queue[0];
    if (head !== undefined && sample.bytes > this.options.memoryLimitBytes) {
      return this.kill({
        reason: "killed-memory",
        culpritSeq: head.seq,
        culpritTenant: head.tenant,
        detail: `its processes held ${Math.round(sample.bytes / 1048576)} MB while a call ran, over ${Math.round(this.options.memoryLimitBytes / 1048576)} MB`,
      });
    }
    this.options.onMemorySample(this);
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

  /** Starts the watchdog's clock for the head of the line (reply-deadline.ts). */
  private startHeadClock(from: number): void {
    this.deadline.clear();
    const head = this.queue[0];
    if (head === undefined) return;
    // Boot time is not the guest's, but a worker that never says ready must not hold its calls forever.
    if (!this.ready) return this.deadline.watch(this.startedAt + this.options.bootLimitMs);
    this.deadline.watch(Math.max(from, head.sentAt) + head.budgetMs + this.options.graceMs);
  }

  private overdue(): void {
    const head = this.queue[0];
    if (head === undefined) return;
    if (!this.ready) return this.kill({ reason: "crashed", detail: `it did not say it was ready within ${this.options.bootLimitMs} ms` });
    this.kill({
      reason: "killed-overdue",
      culpritSeq: head.seq,
      culpritTenant: head.tenant,
      detail: `no reply within ${head.budgetMs} ms + ${this.options.graceMs} ms grace`,
    });
  }

  private lostError(): HookboxError {
    return new HookboxError("SANDBOX_CRASHED", `sandbox worker ${this.pid ?? "?"} is gone`);
  }

  private onChildExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.alive) return;
    this.alive = false;
    this.settleExited();
    this.deadline.dispose();
    this.memory?.stop();
    const tail = this.output.tail();
    const exit: WorkerExit = this.exit ?? {
      reason: "crashed",
      detail: `worker exited (${signal ?? `code ${code}`})${tail ? `: ${tail.trim().split("\n").slice(-3).join(" | ")}` : ""}`,
    };
    this.exit = exit;
    const pending = this.queue.splice(0);
    stopAwaiting(this.awaitedPipe);
    for (const [index, exec] of pending.entries()) {
      // Replies come in order: only the head can have started; the rest never ran any guest code.
      const started = index === 0;
      exec.reject(lostExecError(exit, exec.seq, { worker: this.pid, started }));
    }
    this.options.onExit(this, exit);
  }
}
