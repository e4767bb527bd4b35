import type { JsonObject } from "../turns/json.js";
import type { EventLog } from "./event-log.js";
import type { AnswerResult, ApprovalAnswer, OpenApproval } from "../host/types.js";
import { newPauseId } from "./ids.js";

/** What a beforeToolCall hook's `ask` puts before a human. */
export interface ApprovalRequest extends Omit<OpenApproval, "pauseId" | "deadlineMs"> {
  /** The hook's own timeout; never longer than the run's approval timeout. */
  timeoutMs?: number;
  /** Ends the approval as cancelled (the call's batch was stopped); the run's signal does in any case. */
  signal?: AbortSignal;
}

/** How an approval ended; a cancelled run ends it with the run's abort reason thrown instead. */
export type ApprovalOutcome =
  | { decision: "approved"; args: JsonObject; reason?: string; approvedBy?: string }
  | { decision: "rejected"; reason?: string }
  | { decision: "timeout"; reason: string };

/** Checks edited arguments against the tool's schema: the first violation, or undefined. */
export type ArgsCheck = (toolName: string, args: JsonObject) => { segments: string[]; message: string } | undefined;

interface Pending {
  open: OpenApproval;
  settle(outcome: ApprovalOutcome | "cancelled"): void;
}

/**
 * Human approvals of single tool calls. Several may be open at once (a batch of parallel calls); each is
 * registered before its `approval.requested` event (a sink may answer at once) and ends exactly once: an
 * answer, its timeout (a rejection) or the run's cancellation. Edited arguments that break the tool's schema
 * are refused and the approval stays open, so a typo never costs the call.
 */
export class Approvals {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly options: { events: EventLog; signal: AbortSignal; timeoutMs: number; checkArgs: ArgsCheck }) {}

  /** Open approvals in the order they were requested. */
  list(): OpenApproval[] {
    return [...this.pending.values()].map((entry) => entry.open);
  }

  async ask(request: ApprovalRequest): Promise<ApprovalOutcome> {
    const { events } = this.options;
    const signal = request.signal ?? this.options.signal;
    if (signal.aborted) throw signal.reason;
    const timeoutMs = Math.min(request.timeoutMs ?? this.options.timeoutMs, this.options.timeoutMs);
    const { timeoutMs: _own, signal: _signal, ...shown } = request;
    const open: OpenApproval = { pauseId: newPauseId(), ...shown, deadlineMs: Date.now() + timeoutMs };
    let timer: NodeJS.Timeout | undefined;
    let onAbort = () => {};
    const outcome = await new Promise<ApprovalOutcome | "cancelled">((resolve) => {
      const settle = (value: ApprovalOutcome | "cancelled") => {
        if (!this.pending.delete(open.pauseId)) return;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      };
      this.pending.set(open.pauseId, { open, settle });
      timer = setTimeout(() => settle({ decision: "timeout", reason: `no answer to the approval within ${timeoutMs} ms` }), timeoutMs);
      onAbort = () => settle("cancelled");
      signal.addEventListener("abort", onAbort, { once: true });
      events.emit({ type: "approval.requested", ...open });
    });
    if (outcome === "cancelled") {
      events.emit({ type: "approval.resolved", pauseId: open.pauseId, callId: open.callId, decision: "cancelled" });
      throw signal.reason;
    }
    // The audit record keeps what the answer said: the arguments approved, the reviewer's reason and name.
    const { decision, ...said } = outcome;
    events.emit({ type: "approval.resolved", pauseId: open.pauseId, callId: open.callId, decision, ...said });
    return outcome;
  }

  /** Answers an open approval of this run; unknown or already-ended ids are NOT_FOUND. */
  answer(pauseId: string, answer: ApprovalAnswer): AnswerResult {
    const entry = this.pending.get(pauseId);
    if (!entry) return { ok: false, code: "NOT_FOUND", message: `no open approval ${pauseId} in this run` };
    const reason = answer.reason?.trim();
    if (answer.decision === "reject") {
      entry.settle({ decision: "rejected", ...(reason ? { reason } : {}) });
      return { ok: true, decision: "rejected" };
    }
    const args = answer.args ?? entry.open.args;
    if (answer.args) {
      const issue = this.options.checkArgs(entry.open.name, args);
      if (issue) {
        const where = issue.segments.length ? `args.${issue.segments.join(".")}` : "args";
        return { ok: false, code: "TOOL_ARGS", message: `${where} ${issue.message} (tool ${entry.open.name})`, path: issue.segments };
      }
    }
    const approvedBy = answer.approvedBy?.trim();
    entry.settle({ decision: "approved", args, ...(reason ? { reason } : {}), ...(approvedBy ? { approvedBy } : {}) });
    return { ok: true, decision: "approved" };
  }
}
