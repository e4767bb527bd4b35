// How often this machine takes a busy CPU away (BENCHMARKS.md, "Machine"): a busy loop reads the clock for a few
// seconds and counts the gaps between two readings longer than a threshold. Run: node scripts/bench/vm-gaps.mjs
// Options: --seconds N (default 3), --threshold-us N (default 50).
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { seconds: { type: "string" }, "threshold-us": { type: "string" } } });
const seconds = Number(values.seconds ?? 3);
const thresholdMs = Number(values["threshold-us"] ?? 50) / 1000;
const end = performance.now() + seconds * 1000;
let last = performance.now();
let gaps = 0;
let lostMs = 0;
for (let now = last; now < end; now = performance.now()) {
  if (now - last > thresholdMs) {
    gaps += 1;
    lostMs += now - last;
  }
  last = now;
}
console.log(
  JSON.stringify({
    gaps_per_s: Math.round(gaps / seconds),
    mean_gap_us: gaps ? Math.round((lostMs / gaps) * 1000) : 0,
    time_lost_pct: Math.round((lostMs / (seconds * 1000)) * 1000) / 10,
  }),
);
