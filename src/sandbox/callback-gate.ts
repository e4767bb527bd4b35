import { HookboxError, isHookboxError } from "../errors.js";
import type { DoneMessage } from "./wire/protocol.js";
import type { WorkerProcess } from "./worker-process.js";

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
  /** The worker for the next message, assigning one if needed; throws if there is none. */
  workerForNext(): WorkerProcess;
  /** A message's reply came back; `call`: the call the message was for (none for a load or a coverage read). */
  onDone(done: DoneMessage, call: Call | undefined): void;
  /** The gate opened again after a message to `worker` (replied or lost). */
  onReleased(worker: WorkerProcess): void;
}

/**
 * A tenant's callback gate: at most one message that runs the tenant's code is at its worker at a time, so
 * its callbacks run one at a time, in order. Resumes of awaiting callbacks go to the front of the line.
 */
export class CallbackGate<Call extends GateCall = GateCall> {
  private busy = false;
  private readonly queue: GateTask<Call>[] = [];
  /** The message at the worker now, if any. */
  inFlight: GateTask<Call> | undefined;

  constructor(private readonly owner: GateOwner<Call>) {}

  get isOpen(): boolean {
    return !this.busy;
  }

  /** Messages waiting for the gate. */
  get waiting(): number {
    return this.queue.length;
  }

  enqueue(task: GateTask<Call>, front = false): void {
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
        worker = this.owner.workerForNext();
      } catch (error) {
        task.fail(new HookboxError("SANDBOX_CRASHED", `tenant ${this.owner.tenant}: no sandbox worker: ${(error as Error).message}`));
        continue;
      }
      this.busy = true;
      this.inFlight = task;
      const release = () => {
        this.busy = false;
        this.inFlight = undefined;
        this.owner.onReleased(worker);
        this.pump();
      };
      task.send(worker).then(
        (done) => {
          try {
            this.owner.onDone(done, task.call);
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
}
