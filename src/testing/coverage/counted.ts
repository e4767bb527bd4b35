/*
 * What one script context counted, as its runtime sent it (runtime/coverage.ts): guest data, so its shape is
 * checked against the bundle's counter numbering before it is believed.
 */

/** `{"counts": [...], "site": n}` made real, or undefined when it is not what an instrumented bundle keeps. */
export function parseCounted(text: string, counters: number): { counts: number[]; site: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const candidate = value as { counts?: unknown; site?: unknown } | null;
  if (candidate === null || typeof candidate !== "object" || !Array.isArray(candidate.counts)) return undefined;
  const counts = candidate.counts;
  // A bundle's prelude declares the counters numbered so far (a stack's scripts share one numbering): never more.
  if (counts.length > counters || !counts.every((count) => Number.isInteger(count) && count >= 0)) return undefined;
  const padded =
    counts.length === counters ? (counts as number[]) : [...(counts as number[]), ...new Array<number>(counters - counts.length).fill(0)];
  return { counts: padded, site: Number.isInteger(candidate.site) ? (candidate.site as number) : -1 };
}
