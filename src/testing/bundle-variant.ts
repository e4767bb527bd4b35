import type { BundleVariant } from "../sandbox/api.js";
import { BundleInstrumentation } from "./coverage/instrument.js";

/*
 * How a test case's scripts are bundled: as production bundles them, unless the case pins the clock or coverage is
 * counted. Each is a `BundleVariant` of the script's bundle (same lines, same source map); everything else about
 * the load (the isolate, its limits, the manifest check) is production's.
 */

export interface VariantOptions {
  /** Counts coverage into this instrumentation. */
  coverage?: BundleInstrumentation;
  /** What `Date.now()` and `new Date()` say inside the script, epoch ms. */
  clockMs?: number;
}

let variants = 0;

/** The variant for these options, or undefined for production's own bundle. */
export function bundleVariant(options: VariantOptions): BundleVariant | undefined {
  const { coverage, clockMs } = options;
  if (coverage === undefined && clockMs === undefined) return undefined;
  const preludes: ((js: string) => string)[] = [];
  if (clockMs !== undefined) preludes.push((js) => fixedClockPrelude(clockMs) + js);
  if (coverage !== undefined) preludes.push((js) => coverage.bundlePrelude(js));
  return {
    // Each instrumentation keeps its own counter numbering: its bundles are never shared with another's.
    key: `test#${++variants}${clockMs !== undefined ? `:clock=${clockMs}` : ""}${coverage ? ":coverage" : ""}`,
    ...(coverage ? { source: ({ path, text }: { path: string; text: string }) => coverage.instrumentSource(path, text) } : {}),
    bundle: (js) => preludes.reduce((code, prelude) => prelude(code), js),
  };
}

/**
 * `Date` as the script's code sees it, with a fixed now: a binding in the bundle's own scope (every module of the
 * bundle sees it), so `Date.now()` and `new Date()` give the case's clock, and dates built from a value are real ones.
 */
function fixedClockPrelude(clockMs: number): string {
  return (
    `var Date = (function (RealDate, now) { function FixedDate() { if (!new.target) return new RealDate(now).toString();` +
    ` return arguments.length === 0 ? new RealDate(now) : Reflect.construct(RealDate, Array.prototype.slice.call(arguments)); }` +
    ` FixedDate.now = function () { return now; }; FixedDate.parse = RealDate.parse; FixedDate.UTC = RealDate.UTC;` +
    ` FixedDate.prototype = RealDate.prototype; return FixedDate; })(globalThis.Date, ${JSON.stringify(clockMs)});`
  );
}
