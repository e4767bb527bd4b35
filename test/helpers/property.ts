import type { Parameters } from "fast-check";

/**
 * fast-check's parameters for a property test: a fixed seed, so CI always tries the same cases (set
 * HOOKBOX_FUZZ_SEED to try others, or to replay a failure), and `runs` cases in the suite, or
 * HOOKBOX_FUZZ_RUNS of them under `npm run fuzz`. A slow property (a real server round trip per case) takes a
 * `share` of those: HOOKBOX_FUZZ_RUNS / share, never fewer than `runs`.
 */
export function propertyParameters<T>(runs: number, options: { share?: number } = {}): Parameters<T> {
  const seed = Number(process.env.HOOKBOX_FUZZ_SEED);
  const more = Number(process.env.HOOKBOX_FUZZ_RUNS);
  return {
    seed: Number.isInteger(seed) ? seed : 25_2025,
    numRuns: Number.isInteger(more) && more > 0 ? Math.max(runs, Math.round(more / (options.share ?? 1))) : runs,
  };
}
