// Host stall under each attack: runs the red-team tests (test/redteam/, real sandbox, real loop, real
// `hookbox serve`) with HOOKBOX_STALL_REPORT set, so each attack's measured stall is collected, and prints
// the table of BENCHMARKS.md ("Host stall under each attack").
//
//   node scripts/bench/host-stall.mjs [--runs N] [vitest file filters...]
//
// Each figure is the median over N runs (default 3) of the test file's own measurement; "own work, worst"
// is the largest main-thread CPU time inside the longest gap seen in any run.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const args = process.argv.slice(2);
const runsAt = args.indexOf("--runs");
const runs = runsAt >= 0 ? Number(args.splice(runsAt, 2)[1]) : 3;
const filters = args.length > 0 ? args : ["test/redteam"];

const figures = new Map();
for (let run = 1; run <= runs; run++) {
  const file = join(mkdtempSync(join(tmpdir(), "hookbox-stall-")), "figures.jsonl");
  const result = spawnSync(process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), "run", ...filters], {
    cwd: root,
    env: { ...process.env, HOOKBOX_STALL_REPORT: file },
    encoding: "utf8",
  });
  if (result.status !== 0) process.stderr.write(`run ${run}: the red-team tests failed (figures kept):\n${result.stdout.slice(-2000)}\n`);
  if (!existsSync(file)) continue;
  for (const line of readFileSync(file, "utf8").trim().split("\n").filter(Boolean)) {
    const figure = JSON.parse(line);
    const key = `${figure.attack}\u0000${figure.where}`;
    if (!figures.has(key)) figures.set(key, { attack: figure.attack, where: figure.where, samples: [] });
    figures.get(key).samples.push(figure);
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)];
};
const ms = (value) => (Number.isFinite(value) ? value.toFixed(1) : "-");

console.log(
  `| attack | measured in | stall, wall clock (ms) | stall, host's own work (ms) | own work, worst (ms) | refused / done after (ms) |`,
);
console.log(`| --- | --- | ---: | ---: | ---: | ---: |`);
for (const { attack, where, samples } of figures.values()) {
  const busy = samples.map((s) => s.busyStallMs).filter((v) => v !== undefined);
  console.log(
    `| ${attack.replace(/\|/g, "\\|")} | ${where} | ${ms(median(samples.map((s) => s.stallMs)))} | ${ms(median(busy))} | ${ms(Math.max(...busy))} | ${ms(median(samples.map((s) => s.elapsedMs)))} |`,
  );
}
console.log(`\n${runs} run(s) of: vitest run ${filters.join(" ")}`);
