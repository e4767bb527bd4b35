import { HookboxError, isHookboxError } from "../errors.js";
import { PIPELINE_SEGMENT_MS, type DoneMessage } from "./wire/protocol.js";
import type { WorkerProcess } from "./worker-process.js";

/**
 * How many of a tenant's messages may be at its worker at once. The worker runs them one after another, in
 * the order sent; more than one saves the host <-> worker round trip between them (the worker starts the next
 * as soon as it answers one, and reads and answers several per wake-up), and a resume that arrives meanwhile
 * waits behind at most this many. Deep, because what a co-tenant waits for is bounded by the stop rule
 * (wire/protocol.ts): behind a message over PIPELINE_SEGMENT_MS the worker refuses the rest of those in
 * flight, so of the messages ahead of a co-tenant's at most one is long.
 */
export const PIPELINE_DEPTH = 16;

/** What the gate needs of a callback: whether it ended, and the worker its messages go to. */
export interface GateCall {
  finished: boolean;
  worker?: WorkerProcess;
}

/** One message to the worker that runs the tenant's code (a call's start, a resume, a load). */
export interface GateTask<Call extends GateCall = GateCall> {
  /** The call this message belongs to; a task of a call that already ended is skipped. */
  call?: Call;
  /** A call's first message: if its worker dies before starting it, it can be sent again elsewhere. */
  retryable?: boolean;
  send: (worker: WorkerProcess) => Promise<DoneMessage>;
  fail: (error: HookboxError) => void;
}

/** The tenant side of the gate. */
export interface GateOwner<Call extends GateCall = GateCall> {
  /** Names the tenant in errors. */
  readonly tenant: string;
  /** The worker for the next message when nothing is in flight, assigning one if needed; throws if there is none. */
  workerForNext(): WorkerProcess;
  /** Whether another message may follow those in flight to `worker` (the tenant is staying there). */
  mayPipelineTo(worker: WorkerProcess): boolean;
  /** A message's reply came back; `call`: the call the message was for (none for a load or a coverage read). */
  onDone(done: DoneMessage, call: Call | undefined): void;
  /** A message to `worker` ended (replied, refused or lost). */
  onReleased(worker: WorkerProcess): void;
}

/** A message at the worker, and how it ended once it has (handled in the order sent). */
interface Sent<Call extends GateCall> {
  task: GateTask<Call>;
  worker: WorkerProcess;
  outcome?: { done: DoneMessage } | { error: HookboxError };
}

/**
 * A tenant's callback gate. Messages that run the tenant's code go to its worker in queue order, up to
 * PIPELINE_DEPTH at once and all to the same worker, which runs them one at a time in that order: so the
 * tenant's callbacks run one at a time, in order. Resumes of awaiting callbacks go to the front of the line.
 * Once a message's bound breach or long segment is known, the worker refuses the tenant's messages sent behind it (nothing of
 * them ran) and they come back to the front of the line, to be sent where placement now says.
 */
export class CallbackGate<Call extends GateCall = GateCall> {
  private readonly queue: GateTask<Call>[] = [];
  /** Messages at the worker, in the order sent (the order their replies come). */
  private readonly sent: Sent<Call>[] = [];
  /** Messages sent back (refused, or lost before they started), in the order sent: they go again before the queue. */
  private readonly sentBack: GateTask<Call>[] = [];
  /** Whether the tenant's last reply allows more than one message at the worker: a tenant of long segments sends one at a time. */
  private shortSegments = true;

  constructor(private readonly owner: GateOwner<Call>) {}

  /** Nothing of the tenant is at its worker. */
  get idle(): boolean {
    return this.sent.length === 0;
  }

  /** Messages waiting for the gate. */
  get waiting(): number {
    return this.queue.length + this.sentBack.length;
  }

  /** Whether a first message of `call` (which may be sent again if its worker dies before starting it) is at a worker. */
  hasRetryableInFlight(call: Call): boolean {
    return this.sent.some((sent) => sent.task.retryable === true && sent.task.call === call);
  }

  /** The call of the oldest message at the worker: the one running there, if any runs. */
  get running(): Call | undefined {
    return this.sent[0]?.task.call;
  }

  enqueue(task: GateTask<Call>, front = false): void {
    if (front) this.queue.unshift(task);
    else this.queue.push(task);
    this.pump();
  }

  private pump(): void {
    while (this.sent.length < PIPELINE_DEPTH) {
      const line = this.sentBack.length > 0 ? this.sentBack : this.queue;
      const task = line[0];
      if (task === undefined) return;
      if (task.call?.finished) {
        line.shift();
        continue;
      }
      let worker: WorkerProcess;
      if (this.sent.length > 0) {
        // Behind messages in flight only to their worker, and only while the tenant stays there.
        worker = this.sent[this.sent.length - 1]!.worker;
        if (!this.shortSegments || !this.owner.mayPipelineTo(worker)) return;
        line.shift();
      } else {
        line.shift();
        try {
          worker = this.owner.workerForNext();
        } catch (error) {
          task.fail(new HookboxError("SANDBOX_CRASHED", `tenant ${this.owner.tenant}: no sandbox worker: ${(error as Error).message}`));
          continue;
        }
      }
      const sent: Sent<Call> = { task, worker };
      this.sent.push(sent);
      let reply: Promise<DoneMessage>;
      try {
        reply = task.send(worker);
      } catch (error) {
        reply = Promise.reject(error as Error);
      }
      reply.then(
        (done) => this.ended(sent, { done }),
        (error: unknown) => this.ended(sent, { error: isHookboxError(error) ? error : new HookboxError("SANDBOX_CRASHED", String(error)) }),
      );
    }
  }

  /** Handles ended messages in the order sent, whatever order their promises settled in. */
  private ended(sent: Sent<Call>, outcome: NonNullable<Sent<Call>["outcome"]>): void {
    sent.outcome = outcome;
    while (this.sent[0]?.outcome !== undefined) {
      const head = this.sent.shift()!;
      try {
        this.handle(head.task, head.outcome!);
      } finally {
        this.owner.onReleased(head.worker);
      }
    }
    this.pump();
  }

  private handle(task: GateTask<Call>, outcome: NonNullable<Sent<Call>["outcome"]>): void {
    if ("done" in outcome) {
      this.shortSegments = (outcome.done.cpuMs ?? 0) <= PIPELINE_SEGMENT_MS;
      return this.owner.onDone(outcome.done, task.call);
    }
    const { error } = outcome;
    const call = task.call;
    if (call?.finished) return;
    if (error.details.refused === true || (task.retryable && call !== undefined && error.details.started === false)) {
      // Nothing of it ran: refused behind a breach or a long segment, or its worker died (another tenant's fault) before it started.
      if (task.retryable && call !== undefined) call.worker = undefined;
      this.sentBack.push(task);
      return;
    }
    task.fail(error);
  }
}
