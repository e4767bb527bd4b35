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

/**
 * Counts a run's tokens and cost, inference by inference, and says which limit a run went past.
 * A resumed run starts from what the stored run had used, so a restart does not refill the budget.
 */
export class UsageMeter {
  private used: RunUsage;

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

  /** Adds one finished inference; returns its usage with its cost. */
  record(modelId: string, usage: TokenUsage): RunUsage {
    const price = this.priceOf(modelId);
    const costUsd = price ? (usage.inputTokens * price.inputPerMTok + usage.outputTokens * price.outputPerMTok) / 1_000_000 : 0;
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

  /** The `budget` every ctx and hook payload carries. */
  budget(state: { iteration: number; maxIterations: number; retriesLeft: number; deadlineMs?: number }): Budget {
    return {
      iteration: state.iteration,
      maxIterations: state.maxIterations,
      tokensUsed: this.tokensUsed,
      ...(this.limits.maxTokens !== undefined ? { maxTokens: this.limits.maxTokens } : {}),
      costUsd: this.used.costUsd,
      ...(this.limits.maxCostUsd !== undefined ? { maxCostUsd: this.limits.maxCostUsd } : {}),
      retriesLeft: state.retriesLeft,
      ...(state.deadlineMs !== undefined ? { deadlineMs: state.deadlineMs } : {}),
    };
  }
}
