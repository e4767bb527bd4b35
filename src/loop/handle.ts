import type { Turn } from "../turns/turn.js";
import type { HookboxEvent, FinalStatus } from "../events/types.js";
import type { AnswerResult, ApprovalAnswer, OpenApproval } from "./approvals.js";

/** How a run ended. */
export interface RunResult {
  status: FinalStatus;
  turn: Turn;
  reason?: string;
  errorCode?: string;
  text?: string;
  iterations: number;
}

/** What `loop.start(turn)` and `session.run(prompt)` return. */
export interface RunHandle {
  readonly runId: string;
  readonly sessionId: string;
  readonly inferenceId: string;
  /** Every event of the run from seq 1, then live ones; ends after `run-finished`. */
  events(fromSeq?: number): AsyncIterable<HookboxEvent>;
  /** Resolves when the run has finished (never rejects: failures are a status). */
  wait(): Promise<RunResult>;
  /** Cancels at once: the engine call, running tools, waiting retries, a paused step. */
  cancel(reason?: string): void;
  /** The open pause's id while the run is paused (what a terminal's Enter continues). */
  readonly pauseId?: string;
  /** Continues the pause with this id; false when it is not this run's current pause. */
  continue(pauseId: string): boolean;
  /** Approvals waiting for an answer (beforeToolCall returned `ask`), oldest first. */
  readonly openApprovals: OpenApproval[];
  /** Approves (optionally with edited arguments) or rejects an open approval of this run. */
  answerApproval(pauseId: string, answer: ApprovalAnswer): AnswerResult;
}

export type SnapshotPhase = "pre_inference" | "post_inference" | "post_tools" | "final";
