import { HookboxError } from "../errors.js";
import type { HookboxEvent } from "../events/types.js";
import type { Block, Turn } from "../turns/turn.js";
import type { RunBudgets } from "../host/types.js";
import { eventJson } from "../events/event-json.js";
import { blockJson } from "../turns/block-json.js";
import { BlockBytes } from "../turns/block-bytes.js";
import { headJson } from "../turns/head-json.js";

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
 * Counts a run's bytes. Events are admitted one by one: an event that would take the run past
 * `maxRunBytes` is not recorded (nor any after it, except the run's last, `run-finished`), and the run is
 * stopped at once through `onOverrun`; emitting never throws (events come from everywhere). What the run adds
 * to its turn is measured at phases, and the first overrun is kept for the loop to raise at its next check.
 */
export class RunBudgetMeter {
  private runBytes = 0;
  private turnBytes: number;
  private overrun?: HookboxError;
  private eventsRefused = false;
  /** Told once, at the first event the run's byte budget refuses: the run stops now, not at its next check. */
  onOverrun?: (error: HookboxError) => void;
  /** The blocks the run added (not in the turn it started from), measured by what changed since the last measure. */
  private readonly added: BlockBytes;

  constructor(
    readonly budgets: RunBudgets,
    startTurn: Turn,
  ) {
    // The history a run starts from is not the run's: the context policy bounds what of it the model is sent,
    // and a session never stops because of its length. The turn budget bounds what this run adds.
    const history = new Set(startTurn.blocks);
    this.added = new BlockBytes((block) => !history.has(block));
    this.turnBytes = this.measure(startTurn);
  }

  /** Called for every event (with its JSON text) before it is recorded: false when it does not fit in the run's byte budget. */
  admit(event: HookboxEvent, json = eventJson(event)): boolean {
    const bytes = json.length;
    // The run's last event always goes through: a reader must learn how the run ended (and why).
    if (event.type !== "run-finished" && this.runBytes + bytes > this.budgets.maxRunBytes) {
      this.refuseEvents(this.runBytes + bytes);
      return false;
    }
    this.runBytes += bytes;
    return true;
  }

  private refuseEvents(bytes: number): void {
    if (this.eventsRefused) return;
    this.eventsRefused = true;
    const error = runBudgetError(`the run's events reached ${bytes} bytes, over the run budget of ${this.budgets.maxRunBytes}`, {
      budget: "maxRunBytes",
      bytes,
    });
    this.overrun ??= error;
    this.onOverrun?.(this.overrun);
  }

  /** After each inference: the middleware chain may have rewritten the turn, so it is measured again. */
  measureTurn(turn: Turn): void {
    this.turnBytes = this.measure(turn);
    this.checkTotals();
  }

  /**
   * What the run adds to its turn: the JSON length of the blocks that were not in the turn it started from,
   * plus the turn's own fields (metadata, data), from the blocks that changed since the last measure.
   */
  private measure(turn: Turn): number {
    return headJson(turn).length + this.added.update(turn.blocks);
  }

  /** A tool call's final block (after its hooks) as it joins the turn: throws when it alone is over the per-result budget. */
  addResultBlock(tool: string, block: Block): void {
    const bytes = blockJson(block).length;
    checkToolResultSize(tool, bytes, this.budgets.maxToolResultBytes);
    this.turnBytes += bytes;
    this.checkTotals();
  }

  private checkTotals(): void {
    if (this.overrun) return;
    if (this.turnBytes > this.budgets.maxTurnBytes)
      this.overrun = runBudgetError(
        `the run added ${this.turnBytes} bytes to its turn, over the turn budget of ${this.budgets.maxTurnBytes}`,
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
