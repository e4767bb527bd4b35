import type { Interface } from "node:readline";
import type { HookboxEvent } from "../events/types.js";
import type { RunHandle, ApprovalAnswer } from "../host/types.js";
import type { JsonObject } from "../turns/json.js";
import { printable } from "./terminal-text.js";

type Requested = Extract<HookboxEvent, { type: "approval.requested" }>;
type Stage = "choice" | "reason" | "args";

/**
 * The terminal side of approvals: open approvals are asked one at a time, in request order.
 * `a` approves, `r` rejects (then asks an optional reason), `e` edits the arguments as JSON (prefilled
 * with the current ones); edited arguments the tool's schema refuses are explained and asked again.
 * An approval that ends meanwhile (timeout, cancel) is dropped from the prompt. What a script or the model
 * wrote (name, arguments, call id, reason) is shown with its control characters escaped (terminal-text.ts).
 */
export class ApprovalPrompt {
  private readonly queue: Requested[] = [];
  private current?: { request: Requested; stage: Stage };

  constructor(
    private readonly handle: RunHandle,
    private readonly lines: Interface,
  ) {}

  enqueue(request: Requested): void {
    this.queue.push(request);
    if (!this.current) this.next();
  }

  /** The approval ended (answered here or elsewhere, timed out, cancelled). */
  ended(pauseId: string, decision: string): void {
    const queued = this.queue.findIndex((request) => request.pauseId === pauseId);
    if (queued >= 0) this.queue.splice(queued, 1);
    if (this.current?.request.pauseId !== pauseId) return;
    process.stdout.write(`\n  (approval ${decision} before an answer here)\n`);
    this.current = undefined;
    this.next();
  }

  /** A line typed at the terminal; false when no approval is being asked. */
  takeLine(line: string): boolean {
    const current = this.current;
    if (!current) return false;
    const text = line.trim();
    if (current.stage === "choice") {
      const choice = text.toLowerCase();
      if (choice === "a" || choice === "approve" || choice === "y" || choice === "yes") this.answer({ decision: "approve" });
      else if (choice === "r" || choice === "reject" || choice === "n" || choice === "no") this.ask("reason");
      else if (choice === "e" || choice === "edit") this.ask("args");
      else this.ask("choice");
    } else if (current.stage === "reason") {
      this.answer({ decision: "reject", ...(text ? { reason: text } : {}) });
    } else {
      let args: unknown;
      try {
        args = JSON.parse(text);
      } catch (error) {
        return this.retry(`not JSON: ${(error as Error).message}`, text);
      }
      if (!args || typeof args !== "object" || Array.isArray(args)) return this.retry("the arguments must be a JSON object", text);
      this.answer({ decision: "approve", args: args as JsonObject }, text);
    }
    return true;
  }

  close(): void {
    this.current = undefined;
    this.queue.length = 0;
  }

  private next(): void {
    const request = this.queue.shift();
    if (!request) return;
    this.current = { request, stage: "choice" };
    process.stdout.write(
      `\n  ? approve ${printable(request.name)}(${printable(JSON.stringify(request.args))}) [${printable(request.callId)}]: ${printable(request.script)} asks: ${printable(request.reason)}\n`,
    );
    this.ask("choice");
  }

  private ask(stage: Stage, prefill?: string): void {
    if (!this.current) return;
    this.current.stage = stage;
    const text = {
      choice: "    [a]pprove, [r]eject, [e]dit arguments: ",
      reason: "    reason (optional): ",
      args: "    arguments (JSON): ",
    };
    this.lines.setPrompt(text[stage]);
    this.lines.prompt();
    // Escaped as JSON escapes them, so the prefilled text parses back to the same arguments.
    if (stage === "args") this.lines.write(printable(prefill ?? JSON.stringify(this.current.request.args)));
  }

  /** Explains why the edited arguments were not taken and asks again, prefilled with what was typed. */
  private retry(problem: string, typed: string): true {
    process.stdout.write(`    ${printable(problem)}\n`);
    this.ask("args", typed);
    return true;
  }

  private answer(answer: ApprovalAnswer, typed = ""): void {
    const request = this.current!.request;
    const result = this.handle.answerApproval(request.pauseId, answer);
    if (!result.ok && result.code === "TOOL_ARGS") {
      this.retry(`refused: ${result.message}`, typed);
      return;
    }
    this.current = undefined;
    this.next();
  }
}
