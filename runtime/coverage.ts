/*
 * What a bundle instrumented for coverage (src/testing/coverage/instrument.ts) counted in this context: it keeps
 * `{counts: Uint32Array, site: number}` on the global `__hookbox_coverage__`. A production bundle keeps none.
 * What is there is the script's own data (a script may overwrite it: that only spoils its own report), so it is
 * read as data properties only and leaves as JSON text; the worker bounds the read by time, the host checks
 * its shape against the bundle's coverage map.
 */
import { JSONStringify, ReflectGetOwnPropertyDescriptor, defineData, globalObject } from "./primordials.js";

export const COVERAGE_GLOBAL = "__hookbox_coverage__";
/** More counters than any bundle under the size limit can have: a longer `counts` is not a real one. */
const MAX_COUNTERS = 1 << 20;

function ownValue(target: unknown, key: string): unknown {
  if (target === null || (typeof target !== "object" && typeof target !== "function")) return undefined;
  const descriptor = ReflectGetOwnPropertyDescriptor(target as object, key);
  return descriptor === undefined ? undefined : descriptor.value;
}

/** `{"counts": [...], "site": n}`, or "null"; the decision site is reset to -1 for the next read. */
export function readCoverage(): string {
  try {
    const state = ownValue(globalObject, COVERAGE_GLOBAL);
    const counts = ownValue(state, "counts") as ArrayLike<unknown> | undefined;
    if (counts === undefined || counts === null) return "null";
    const length = counts.length;
    if (typeof length !== "number" || !(length >= 0 && length <= MAX_COUNTERS)) return "null";
    let text = "";
    for (let i = 0; i < length; i++) text += (i === 0 ? "" : ",") + ((counts[i] as number) >>> 0);
    const site = ownValue(state, "site");
    defineData(state as object, "site", -1);
    return '{"counts":[' + text + '],"site":' + JSONStringify(typeof site === "number" && site >= 0 ? site | 0 : -1) + "}";
  } catch {
    return "null";
  }
}
