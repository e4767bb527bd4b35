// Serve's CPU per run by thread, over consecutive windows of runs of the bench's workload (http-workload.mjs): the
// main thread, V8's helper threads (node-V8Worker: the concurrent optimizing compiler and the GC's parallel work) and
// libuv's pool, from /proc/PID/task/TID/schedstat and comm. It shows how long serve takes to reach its steady state:
// the helpers' share falls while V8 is still optimizing the request path, and stays level once it is done.
// node scripts/bench/serve-threads.mjs [--windows N] [--runs-per-client N] [--clients N] [--store memory|file]
// [--warm-up RUNS] [--node-arg FLAG ...] (after npm run build; defaults: 6 windows of 20 runs a client from 50
// clients, the file store, no warm-up past the first 10 runs; --node-arg starts serve with that Node or V8 flag). `--warm-up 3000 --runs-per-client 4 --windows 20` gives windows the size of the
// bench's timed part (http-workload.mjs), one after another in its steady state: how much one such window varies.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startServe, timedRuns, warmUp, writeTenant } from "./http-workload.mjs";
import { cpuMsByThreadName } from "./proc-cpu.mjs";

const { values } = parseArgs({
  options: {
    windows: { type: "string" },
    "runs-per-client": { type: "string" },
    clients: { type: "string" },
    store: { type: "string" },
    "warm-up": { type: "string" },
    "node-arg": { type: "string", multiple: true },
  },
});
const warmUpRuns = Number(values["warm-up"] ?? 0);
if (!Number.isInteger(warmUpRuns) || warmUpRuns < 0) throw new Error("--warm-up takes a number of runs");
const clients = Number(values.clients ?? 50);
const runsPerClient = Number(values["runs-per-client"] ?? 20);

const work = mkdtempSync(join(tmpdir(), "hookbox-serve-threads-"));
try {
  writeTenant(work);
  const server = await startServe(work, values.store === "memory" ? ":memory:" : join(work, "bench.db"), {
    nodeArgs: values["node-arg"] ?? [],
  });
  try {
    let done = await warmUp([server.url], clients, { runs: warmUpRuns });
    for (let window = 0; window < Number(values.windows ?? 6); window++) {
      const before = cpuMsByThreadName(server.pid);
      const timed = await timedRuns([server.url], { clients, runsPerClient });
      const after = cpuMsByThreadName(server.pid);
      const perRun = Object.fromEntries(
        Object.keys(after)
          .map((name) => [name, (after[name] - (before[name] ?? 0)) / timed.runs])
          .filter(([, ms]) => ms >= 0.0005),
      );
      const total = Object.values(perRun).reduce((sum, ms) => sum + ms, 0);
      const parts = Object.entries(perRun).map(([name, ms]) => `${name} ${ms.toFixed(3)}`);
      process.stdout.write(
        `runs ${done}-${done + timed.runs}: ${total.toFixed(3)} ms a run (${parts.join(", ")}), ${timed.runsPerS.toFixed(0)} runs/s\n`,
      );
      done += timed.runs;
    }
  } finally {
    await server.stop();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
