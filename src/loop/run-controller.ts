import { HookboxError } from "../errors.js";
import type { HookboxEvent, LiveEvent } from "../events/types.js";
import type { EventLog } from "./event-log.js";
import type { RunHandle, RunResult, AnswerResult, ApprovalAnswer, OpenApproval } from "../host/types.js";
import type { Stepper } from "./stepper.js";
import type { Approvals } from "./approvals.js";

/** The run handle: events, wait, cancel and continue over one running loop. */
export class RunController implements RunHandle {
  readonly runId: string;
  readonly sessionId: string;
  readonly inferenceId: string;
  private readonly abort = new AbortController();
  private stepper?: Stepper;
  private approvals?: Approvals;
  private result?: Promise<RunResult>;
  cancelReason?: string;

  constructor(
    ids: { runId: string; sessionId: string; inferenceId: string },
    private readonly log: EventLog,
  ) {
    this.runId = ids.runId;
    this.sessionId = ids.sessionId;
    this.inferenceId = ids.inferenceId;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  attachStepper(stepper: Stepper): void {
    this.stepper = stepper;
  }

  attachApprovals(approvals: Approvals): void {
    this.approvals = approvals;
  }

  get openApprovals(): OpenApproval[] {
    return this.approvals?.list() ?? [];
  }

  answerApproval(pauseId: string, answer: ApprovalAnswer): AnswerResult {
    return this.approvals?.answer(pauseId, answer) ?? { ok: false, code: "NOT_FOUND", message: `no open approval ${pauseId} in this run` };
  }

  finishWith(result: Promise<RunResult>): void {
    this.result = result;
  }

  events(fromSeq?: number): AsyncIterable<HookboxEvent>;
  events(fromSeq: number | undefined, options: { textDeltas: boolean }): AsyncIterable<LiveEvent>;
  events(fromSeq?: number, options: { textDeltas?: boolean } = {}): AsyncIterable<LiveEvent> {
    return this.log.iterate(fromSeq, { textDeltas: options.textDeltas ?? false });
  }

  wait(): Promise<RunResult> {
    if (!this.result) throw new Error("run not started");
    return this.result;
  }

  cancel(reason = "cancelled"): void {
    if (this.abort.signal.aborted) return;
    this.cancelReason = reason;
    this.abort.abort(new HookboxError("CANCELLED", reason));
  }

  /** Ends the run as failed (DEADLINE) when `deadlineMs` (epoch ms) passes; the timer ends with the run. */
  enforceDeadline(deadlineMs: number): void {
    const timer = setTimeout(
      () => {
        if (this.abort.signal.aborted) return;
        this.deadlinePassed = true;
        this.abort.abort(new HookboxError("DEADLINE", `the run's deadline passed (${new Date(deadlineMs).toISOString()})`));
      },
      Math.max(0, deadlineMs - Date.now()),
    );
    timer.unref();
    void this.result?.finally(() => clearTimeout(timer));
  }

  deadlinePassed = false;

  /** Why the run was stopped from outside its loop as a failure (a budget that holds at every event), if it was. */
  failure?: HookboxError;

  /** Stops the run as failed with `error`: the signal aborts with it, and the loop ends the run with its code. */
  fail(error: HookboxError): void {
    if (this.abort.signal.aborted) return;
    this.failure = error;
    this.abort.abort(error);
  }

  continue(pauseId: string): boolean {
    return this.stepper?.continue(pauseId) ?? false;
  }

  /** The open pause's id, if the run is paused. */
  get pauseId(): string | undefined {
    return this.stepper?.currentPauseId;
  }
}
