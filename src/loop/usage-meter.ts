import type { Budget } from "../contracts/context.js";
import type { ModelPricing, Pricing, RunUsage, TokenUsage } from "../host/usage.js";

export interface UsageLimits {
  maxTokens?: number;
  maxCostUsd?: number;
  pricing?: Pricing;
}

/** `$0.15`: at most six decimals (a millionth of a dollar), no trailing zeros. */
export function formatUsd(amount: number): string {
  return `$${Number(amount.toFixed(6))}`;
}

/** What a call in flight holds against the run's budget until it is answered. */
export interface UsageHold {
  release(): void;
}

/**
 * Counts a run's tokens and cost, inference by inference, and says which limit a run went past.
 * A resumed run starts from what the stored run had used, so a restart does not refill the budget.
 * Calls that run beside each other (a script's guard-model calls) hold what they may spend while in
 * flight, so they cannot all pass the budget check before any of them has spent.
 */
export class UsageMeter {
  private used: RunUsage;
  private held = { tokens: 0, costUsd: 0 };

  constructor(
    private readonly limits: UsageLimits,
    start: RunUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0 },
  ) {
    this.used = { ...start };
  }

  get total(): RunUsage {
    return { ...this.used };
  }

  get tokensUsed(): number {
    return this.used.inputTokens + this.used.outputTokens;
  }

  priceOf(modelId: string): ModelPricing | undefined {
    const pricing = this.limits.pricing;
    if (!pricing) return undefined;
    return Object.hasOwn(pricing, modelId) ? pricing[modelId] : Object.hasOwn(pricing, "*") ? pricing["*"] : undefined;
  }

  private costOf(modelId: string, usage: TokenUsage): number {
    const price = this.priceOf(modelId);
    return price ? (usage.inputTokens * price.inputPerMTok + usage.outputTokens * price.outputPerMTok) / 1_000_000 : 0;
  }

  /** Adds one finished inference; returns its usage with its cost. */
  record(modelId: string, usage: TokenUsage): RunUsage {
    const costUsd = this.costOf(modelId, usage);
    this.used = {
      inputTokens: this.used.inputTokens + usage.inputTokens,
      outputTokens: this.used.outputTokens + usage.outputTokens,
      costUsd: this.used.costUsd + costUsd,
    };
    return { ...usage, costUsd };
  }

  /** The limit the run is past, as a sentence naming it; undefined while within both. */
  exceeded(): string | undefined {
    const { maxTokens, maxCostUsd } = this.limits;
    if (maxTokens !== undefined && this.tokensUsed > maxTokens)
      return `the run used ${this.tokensUsed} tokens, past its limit maxTokens (${maxTokens})`;
    if (maxCostUsd !== undefined && this.used.costUsd > maxCostUsd)
      return `the run cost ${formatUsd(this.used.costUsd)}, past its limit maxCostUsd (${formatUsd(maxCostUsd)})`;
    return undefined;
  }

  /**
   * Holds `most` (what the call may spend at most) against the budget until released; refused, with the
   * sentence naming the limit, when what the run spent and what its calls in flight hold are already past
   * it. Each call is admitted while there is room, so the run ends past its budget by at most one call.
   */
  hold(modelId: string, most: TokenUsage): UsageHold | string {
    const { maxTokens, maxCostUsd } = this.limits;
    const { tokens, costUsd } = this.held;
    if (maxTokens !== undefined && this.tokensUsed + tokens > maxTokens)
      return `the run used ${this.tokensUsed} tokens, and calls in flight may use ${tokens} more, past its limit maxTokens (${maxTokens})`;
    if (maxCostUsd !== undefined && this.used.costUsd + costUsd > maxCostUsd)
      return `the run cost ${formatUsd(this.used.costUsd)}, and calls in flight may cost ${formatUsd(costUsd)} more, past its limit maxCostUsd (${formatUsd(maxCostUsd)})`;
    const hold = { tokens: most.inputTokens + most.outputTokens, costUsd: this.costOf(modelId, most) };
    this.held = { tokens: tokens + hold.tokens, costUsd: costUsd + hold.costUsd };
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.held = { tokens: this.held.tokens - hold.tokens, costUsd: this.held.costUsd - hold.costUsd };
      },
    };
  }

  /** The `budget` every ctx and hook payload carries. */
  budget(iteration: number, maxIterations: number, retriesLeft: number, deadlineMs: number | undefined): Budget {
    // Field by field, in the key order hooks and middleware see: several of these per tool call.
    const budget = { iteration, maxIterations, tokensUsed: this.tokensUsed } as Budget;
    if (this.limits.maxTokens !== undefined) budget.maxTokens = this.limits.maxTokens;
    budget.costUsd = this.used.costUsd;
    if (this.limits.maxCostUsd !== undefined) budget.maxCostUsd = this.limits.maxCostUsd;
    budget.retriesLeft = retriesLeft;
    if (deadlineMs !== undefined) budget.deadlineMs = deadlineMs;
    return budget;
  }
}
