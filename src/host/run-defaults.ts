import type { LoopLimits } from "../loop/loop.js";
import { DEFAULT_RETRY_BOUNDS } from "../loop/retry-budget.js";
import type { RunOptions } from "./types.js";

export const DEFAULT_PAUSE_TIMEOUT_MS = 30_000;
export const DEFAULT_APPROVAL_TIMEOUT_MS = 300_000;

/**
 * Per-run options over session defaults over tenant defaults. Scalars replace; the bags that are naturally
 * partial (tags, userContext, retry bounds) merge key by key, so a run can add one tag without losing the rest.
 */
export function mergeRunOptions(...layers: (RunOptions | undefined)[]): RunOptions {
  const merged: RunOptions = {};
  for (const layer of layers) {
    if (!layer) continue;
    for (const [key, value] of Object.entries(layer)) {
      if (value === undefined) continue;
      const k = key as keyof RunOptions;
      const prev = merged[k];
      (merged as Record<string, unknown>)[k] =
        prev && typeof prev === "object" && typeof value === "object" && !Array.isArray(value) ? { ...prev, ...value } : value;
    }
  }
  return merged;
}

export function loopLimits(options: RunOptions): LoopLimits {
  return {
    maxIterations: options.maxIterations ?? 20,
    maxParallelTools: options.maxParallelTools ?? 4,
    ...(options.toolTimeoutMs !== undefined ? { toolTimeoutMs: options.toolTimeoutMs } : {}),
    errorPolicy: options.errorPolicy ?? "continue",
    retry: { ...DEFAULT_RETRY_BOUNDS, ...options.retry },
    maxContextRestarts: options.maxContextRestarts ?? 5,
    maxConsecutiveToolErrors: 10,
    defaultBackoffMs: 100,
    modelRetries: options.modelRetries ?? 2,
    approvalTimeoutMs: options.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
    maxFinishContinues: options.maxFinishContinues ?? 3,
  };
}
