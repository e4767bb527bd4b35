// How long the loop bench's host takes to reach its steady state: `node scripts/bench/loop-warm-up.mjs [--rounds N]
// [--window N]` (after `npm run build`). It runs `loop-floor.mjs --curve N` (the bench's workload from its first
// round, default 60) under `node --trace-opt` and prints one JSON line per round (calls/s, the host's CPU a tool
// call, and how many functions V8's optimizing compiler, TurboFan, finished compiling during it), then one per
// window of rounds (default 10): the window's calls/s (its calls over its time), its mean host CPU a call and its
// compilations. loop-throughput.mjs times its rounds after the window where these compilations have died down.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({ options: { rounds: { type: "string" }, window: { type: "string" } } });
const rounds = Number(values.rounds ?? 60);
const window = Number(values.window ?? 10);
if (!Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(window) || window < 1)
  throw new Error("--rounds and --window take positive integers");

const child = spawn(process.execPath, ["--trace-opt", join(here, "loop-floor.mjs"), "--curve", String(rounds)], {
  stdio: ["ignore", "pipe", "inherit"],
});
const curve = [];
let compiles = 0; // TurboFan compilations finished since the last round's line
for await (const line of createInterface({ input: child.stdout })) {
  if (line.startsWith("[completed compiling") && line.includes("target TURBOFAN")) compiles++;
  if (!line.startsWith("{")) continue;
  const round = { ...JSON.parse(line), turbofan_compiles: compiles };
  compiles = 0;
  curve.push(round);
  process.stdout.write(`${JSON.stringify(round)}\n`);
}
const code = await new Promise((resolve) => child.on("close", resolve));
if (code !== 0) throw new Error(`loop-floor.mjs --curve exited with ${code}`);

for (let from = 0; from < curve.length; from += window) {
  const part = curve.slice(from, from + window);
  // Every round makes the same calls, so the window's calls over its time is the rounds' harmonic mean.
  const secondsPerCall = part.reduce((sum, r) => sum + 1 / r.calls_per_s, 0);
  const hostCpu = part.reduce((sum, r) => sum + r.host_cpu_us_per_call, 0) / part.length;
  process.stdout.write(
    `${JSON.stringify({
      rounds: `${from + 1}-${from + part.length}`,
      calls_per_s: Math.round(part.length / secondsPerCall),
      host_cpu_us_per_call: Math.round(hostCpu * 10) / 10,
      turbofan_compiles: part.reduce((sum, r) => sum + r.turbofan_compiles, 0),
    })}\n`,
  );
}
