import type { LoopLimits } from "../loop/loop.js";
import { DEFAULT_RETRY_BOUNDS } from "../loop/retry-budget.js";
import type { RunOptions } from "./types.js";

export const DEFAULT_PAUSE_TIMEOUT_MS = 30_000;

/** Per-run options over tenant/session defaults over the built-in defaults. */
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
  };
}
