import { createInterface, type Interface } from "node:readline";
import type { HookboxEvent } from "../events/types.js";
import type { AnswerResult, ApprovalAnswer, RunHandle } from "../host/types.js";
import { isParsedObject, type JsonObject } from "../turns/json.js";
import { ApprovalPrompt } from "./approval-prompt.js";
import { printable } from "./terminal-text.js";

export interface StdinOptions {
  command: string;
  json: boolean;
  step: boolean;
  /** A person at a terminal (human mode, stdin and stdout TTYs): approvals are asked interactively. */
  interactive: boolean;
}

/**
 * What the CLI reads on stdin while a run goes on: step continues and approval answers. The reader starts
 * with the run in step mode, otherwise at the first approval request, so a run that never pauses leaves
 * stdin alone. Lines:
 * - `{"continue":"<pauseId>"}`, `{"approve":"<pauseId>","args"?:{...},"reason"?:"...","approvedBy"?:"..."}`, `{"reject":"<pauseId>","reason"?:"..."}`;
 * - in human step mode, any other line (Enter) continues the current pause;
 * - at a terminal, approvals are asked one at a time by an interactive prompt instead.
 * A bad line is reported on stderr and ignored: the run is not harmed.
 */
export class StdinAnswers {
  private lines?: Interface;
  private prompt?: ApprovalPrompt;
  /** stdin reached its end. */
  private ended = false;
  /** The run is over and the CLI closes the reader itself. */
  private closing = false;

  constructor(
    private readonly handle: RunHandle,
    private readonly options: StdinOptions,
  ) {
    if (options.step) this.start();
  }

  /** Sees every event the CLI prints: approval requests start the reader or the prompt. */
  onEvent(event: HookboxEvent): void {
    if (event.type === "approval.requested") {
      if (this.ended) return this.rejectOpen();
      this.start();
      this.prompt?.enqueue(event);
    } else if (event.type === "approval.resolved") this.prompt?.ended(event.pauseId, event.decision);
  }

  close(): void {
    this.closing = true;
    this.prompt?.close();
    this.lines?.close();
  }

  /**
   * Nobody can answer once stdin has ended (CI, `< /dev/null`, a pipe whose writer is gone): every open approval,
   * and each one asked later, is a rejection at once instead of a wait for its timeout.
   */
  private rejectOpen(): void {
    for (const open of this.handle.openApprovals) this.handle.answerApproval(open.pauseId, { decision: "reject", reason: "stdin closed" });
  }

  private start(): void {
    if (this.lines) return;
    const interactive = this.options.interactive;
    this.lines = createInterface({ input: process.stdin, ...(interactive ? { output: process.stdout, terminal: true } : {}) });
    // At a terminal readline takes Ctrl-C itself: it still cancels the run at once.
    this.lines.on("SIGINT", () => this.handle.cancel("cancelled by SIGINT"));
    if (interactive) this.prompt = new ApprovalPrompt(this.handle, this.lines);
    this.lines.on("line", (line) => {
      if (this.prompt?.takeLine(line)) return;
      this.onLine(line);
    });
    this.lines.on("close", () => {
      if (this.closing) return;
      this.ended = true;
      this.prompt?.close();
      this.rejectOpen();
    });
  }

  private onLine(line: string): void {
    const text = line.trim();
    let message: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = text ? JSON.parse(text) : undefined;
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) message = parsed as Record<string, unknown>;
    } catch {
      /* not JSON: a human's Enter in step mode, or reported below */
    }
    if (!message && !this.options.json && this.options.step) {
      const current = this.handle.pauseId;
      if (current) this.handle.continue(current);
      return;
    }
    if (!text) return;
    if (typeof message?.continue === "string") {
      if (!this.handle.continue(message.continue)) this.warn(`${message.continue} is not this run's open pause`);
    } else if (typeof message?.approve === "string" && approveFields(message)) {
      this.answer(message.approve, {
        decision: "approve",
        ...(message.args ? { args: message.args as JsonObject } : {}),
        ...(message.reason ? { reason: message.reason as string } : {}),
        ...(message.approvedBy ? { approvedBy: message.approvedBy as string } : {}),
      });
    } else if (typeof message?.reject === "string" && (message.reason === undefined || typeof message.reason === "string")) {
      this.answer(message.reject, { decision: "reject", ...(message.reason ? { reason: message.reason as string } : {}) });
    } else {
      this.warn(
        `expected {"continue":"<pauseId>"}, {"approve":"<pauseId>","args"?:{...},"reason"?:"...","approvedBy"?:"..."} or {"reject":"<pauseId>","reason"?:"..."}, got ${text.slice(0, 80)}`,
      );
    }
  }

  private answer(pauseId: string, answer: ApprovalAnswer): void {
    const result: AnswerResult = this.handle.answerApproval(pauseId, answer);
    if (result.ok) return;
    if (result.code === "NOT_FOUND") this.warn(`${pauseId} is not this run's open approval`);
    else this.warn(`approval ${pauseId}: ${result.message}; the approval stays open`);
  }

  private warn(message: string): void {
    process.stderr.write(`hookbox ${this.options.command}: stdin: ${printable(message)}\n`);
  }
}

/** An approve line's optional fields have their types: args an object, reason and approvedBy strings. */
function approveFields(message: Record<string, unknown>): boolean {
  const optionalString = (value: unknown) => value === undefined || typeof value === "string";
  return (
    (message.args === undefined || isParsedObject(message.args)) && optionalString(message.reason) && optionalString(message.approvedBy)
  );
}
