/* What a run consumes and what it costs: part of the seam (types.ts), of events and of the store. */

/** USD per million tokens, input and output. */
export interface ModelPricing {
  inputPerMTok: number;
  outputPerMTok: number;
}

/** Pricing by model id (`gpt-4o-mini`, `scripted`); `"*"` prices any model not named. */
export type Pricing = Record<string, ModelPricing>;

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** What a run has consumed: the `usage` of `inference-finished` and `run-finished`. */
export interface RunUsage extends TokenUsage {
  /** 0 when no inference of the run had pricing. */
  costUsd: number;
}
