import type { RetryBounds } from "../host/types.js";

export const DEFAULT_RETRY_BOUNDS: RetryBounds = { maxAttemptsPerCall: 3, maxRetriesPerRun: 20, budgetMs: 30_000 };

/** Retries are bounded three ways; `check` names the bound that refuses a retry. */
export class RetryBudget {
  private retries = 0;
  private spentMs = 0;

  constructor(readonly bounds: RetryBounds) {}

  /** undefined when a retry is allowed, else the name of the bound that stops it. */
  check(attempt: number, backoffMs: number): string | undefined {
    if (attempt >= this.bounds.maxAttemptsPerCall) return `attempts per call (${this.bounds.maxAttemptsPerCall})`;
    if (this.retries >= this.bounds.maxRetriesPerRun) return `retries per run (${this.bounds.maxRetriesPerRun})`;
    if (this.spentMs + backoffMs > this.bounds.budgetMs) return `retry time budget per run (${this.bounds.budgetMs} ms)`;
    return undefined;
  }

  take(): void {
    this.retries += 1;
  }

  /** Time spent on retries (backoff and re-executions) counts against the budget. */
  spend(ms: number): void {
    this.spentMs += ms;
  }

  /** Retries the run may still make (the per-run count; the other bounds apply per call and in time). */
  retriesLeft(): number {
    return Math.max(0, this.bounds.maxRetriesPerRun - this.retries);
  }

  remainingMs(): number {
    return Math.max(0, this.bounds.budgetMs - this.spentMs);
  }
}
