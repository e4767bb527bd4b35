import type { RunOptions } from "../host/types.js";

/**
 * Per-run options over session defaults over tenant defaults. Scalars replace; the bags that are naturally
 * partial (tags, userContext, retry bounds) merge key by key, so a run can add one tag without losing the rest.
 */
export function mergeRunOptions(...layers: (RunOptions | undefined)[]): RunOptions {
  const merged: RunOptions = {};
  for (const layer of layers) {
    if (!layer) continue;
    for (const [key, value] of Object.entries(layer) as [keyof RunOptions, unknown][]) {
      if (value === undefined) continue;
      if ((key === "tags" || key === "userContext" || key === "retry") && isPlainObject(value)) {
        (merged as Record<string, unknown>)[key] = { ...((merged[key] as object | undefined) ?? {}), ...value };
      } else {
        (merged as Record<string, unknown>)[key] = value;
      }
    }
  }
  return merged;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
