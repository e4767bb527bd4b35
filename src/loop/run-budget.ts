import { HookboxError } from "../errors.js";
import type { HookboxEvent } from "../events/types.js";
import type { Block, Turn } from "../turns/turn.js";
import type { RunBudgets } from "../host/types.js";

export const DEFAULT_RUN_BUDGETS: RunBudgets = {
  maxRunBytes: 16 * 1024 * 1024,
  maxToolResultBytes: 1024 * 1024,
  maxTurnBytes: 4 * 1024 * 1024,
  maxToolCallsPerInference: 64,
};

export function runBudgetError(message: string, details: Record<string, unknown>): HookboxError {
  return new HookboxError("RUN_BUDGET", message, details);
}

/**
 * Counts a run's bytes as its events are emitted. Emitting never throws (events come from everywhere); the
 * first overrun is kept and the loop raises it at its next check, before the next tool call or snapshot,
 * so at most one phase's output lands beyond the budget.
 */
export class RunBudgetMeter {
  private runBytes = 0;
  private turnBytes: number;
  private overrun?: HookboxError;

  constructor(
    readonly budgets: RunBudgets,
    startTurn: Turn,
  ) {
    this.turnBytes = JSON.stringify(startTurn).length;
    if (this.turnBytes > budgets.maxTurnBytes)
      this.overrun = runBudgetError(`the run's starting turn is ${this.turnBytes} bytes, over the turn budget of ${budgets.maxTurnBytes}`, {
        budget: "maxTurnBytes",
        bytes: this.turnBytes,
      });
  }

  /** Called for every event. */
  count(event: HookboxEvent): void {
    this.runBytes += JSON.stringify(event).length;
    this.checkTotals();
  }

  /** After each inference: the middleware chain may have rewritten the whole turn, so it is measured anew. */
  measureTurn(turn: Turn): void {
    this.turnBytes = JSON.stringify(turn).length;
    this.checkTotals();
  }

  /** A tool call's final block (after its hooks) as it joins the turn: throws when it alone is over the per-result budget. */
  addResultBlock(tool: string, block: Block): void {
    const bytes = JSON.stringify(block).length;
    checkToolResultSize(tool, bytes, this.budgets.maxToolResultBytes);
    this.turnBytes += bytes;
    this.checkTotals();
  }

  private checkTotals(): void {
    if (this.overrun) return;
    if (this.runBytes > this.budgets.maxRunBytes)
      this.overrun = runBudgetError(`the run's events reached ${this.runBytes} bytes, over the run budget of ${this.budgets.maxRunBytes}`, {
        budget: "maxRunBytes",
        bytes: this.runBytes,
      });
    else if (this.turnBytes > this.budgets.maxTurnBytes)
      this.overrun = runBudgetError(
        `the run's turn reached ${this.turnBytes} bytes, over the turn budget of ${this.budgets.maxTurnBytes}`,
        {
          budget: "maxTurnBytes",
          bytes: this.turnBytes,
        },
      );
  }

  /** Throws the first overrun, if any. */
  check(): void {
    if (this.overrun) throw this.overrun;
  }

  /** Throws when one inference asked for more tool calls than the budget allows. */
  checkToolCalls(count: number): void {
    const max = this.budgets.maxToolCallsPerInference;
    if (count > max)
      throw runBudgetError(`the model asked for ${count} tool calls in one inference, over the budget of ${max}; none of them ran`, {
        budget: "maxToolCallsPerInference",
        count,
      });
  }
}

/** The per-result budget: `bytes` of one tool result (a script tool's reply text is measured before it is parsed). */
export function checkToolResultSize(tool: string, bytes: number, maxToolResultBytes: number | undefined): void {
  if (maxToolResultBytes !== undefined && bytes > maxToolResultBytes)
    throw runBudgetError(`tool ${tool} returned ${bytes} bytes, over the per-result budget of ${maxToolResultBytes}`, {
      budget: "maxToolResultBytes",
      tool,
      bytes,
    });
}
