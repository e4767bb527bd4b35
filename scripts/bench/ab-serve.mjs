// Serve's CPU per run of two built checkouts, measured at the same time: each round starts `hookbox serve` from
// both (the bench's tenant and workload, scripts/bench/http-workload.mjs), warms both, then runs the clients of
// both at once, so both see the same load on a shared machine. One after another, a loaded 2-core machine moves
// http_cpu_ms_per_run by 10-20% between readings of the same code; side by side, a change of a few percent shows.
// Rounds alternate which side starts first. Prints each round and the mean ratio B/A.
// node scripts/bench/ab-serve.mjs --a DIR --b DIR [--rounds N] [--clients N] [--runs-per-client N] [--store memory|file]
//   [--warm-up-runs N] (untimed runs after the first 10, default http-workload.mjs WARM_UP_RUNS, 600)
//   [--a-node-arg FLAG]... [--b-node-arg FLAG]... (Node options for one side's serve, e.g. a V8 flag against none)
// (DIR: a checkout with its dist built, e.g. `git worktree add /tmp/base main && (cd /tmp/base && npm ci && npm run build)`).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { WARM_UP_RUNS } from "./http-workload.mjs";

const { values } = parseArgs({
  options: {
    a: { type: "string" },
    b: { type: "string" },
    rounds: { type: "string" },
    clients: { type: "string" },
    "runs-per-client": { type: "string" },
    store: { type: "string" },
    "warm-up-runs": { type: "string" },
    "a-node-arg": { type: "string", multiple: true },
    "b-node-arg": { type: "string", multiple: true },
  },
});
if (!values.a || !values.b) {
  process.stderr.write(
    "usage: node scripts/bench/ab-serve.mjs --a DIR --b DIR [--rounds N] [--clients N] [--runs-per-client N] [--store memory|file] [--warm-up-runs N] [--a-node-arg FLAG]... [--b-node-arg FLAG]...\n",
  );
  process.exit(2);
}
const clients = Number(values.clients ?? 50);
const runsPerClient = Number(values["runs-per-client"] ?? 4);
// After the first 10 runs, as bench-server.mjs waits (http-workload.mjs WARM_UP_RUNS): serve's steady state.
const warmUpRuns = Number(values["warm-up-runs"] ?? WARM_UP_RUNS);

/** A side's own workload and CPU reader, so each runs its own checkout's bin/hookbox.js. */
async function side(dir, nodeArgs = []) {
  const root = resolve(dir);
  return {
    root,
    nodeArgs,
    workload: await import(pathToFileURL(join(root, "scripts/bench/http-workload.mjs")).href),
    treeCpuMs: (await import(pathToFileURL(join(root, "scripts/bench/proc-cpu.mjs")).href)).treeCpuMs,
  };
}
const sides = { A: await side(values.a, values["a-node-arg"]), B: await side(values.b, values["b-node-arg"]) };
const readings = { A: [], B: [] };
const work = mkdtempSync(join(tmpdir(), "hookbox-ab-serve-"));
try {
  for (let round = 1; round <= Number(values.rounds ?? 6); round++) {
    const order = round % 2 ? ["A", "B"] : ["B", "A"];
    const servers = {};
    try {
      for (const name of order) {
        const dir = mkdtempSync(join(work, `${name}-`));
        sides[name].workload.writeTenant(dir);
        servers[name] = await sides[name].workload.startServe(dir, values.store === "memory" ? ":memory:" : join(dir, "bench.db"), {
          nodeArgs: sides[name].nodeArgs,
        });
      }
      await Promise.all(order.map((name) => sides[name].workload.warmUp([servers[name].url], clients)));
      // Both sides get the same steady-state warm-up, whatever their own http-workload.mjs does.
      if (warmUpRuns > 0)
        await Promise.all(
          order.map((name) =>
            sides[name].workload.timedRuns([servers[name].url], { clients, runsPerClient: Math.ceil(warmUpRuns / clients) }),
          ),
        );
      const before = Object.fromEntries(order.map((name) => [name, sides[name].treeCpuMs(servers[name].pid)]));
      const timed = Object.fromEntries(
        await Promise.all(
          order.map(async (name) => [name, await sides[name].workload.timedRuns([servers[name].url], { clients, runsPerClient })]),
        ),
      );
      const line = order.map((name) => {
        const after = sides[name].treeCpuMs(servers[name].pid);
        const cpuMsPerRun = (after.own - before[name].own) / timed[name].runs;
        readings[name].push(cpuMsPerRun);
        return `${name} ${cpuMsPerRun.toFixed(2)} ms/run (${timed[name].runsPerS.toFixed(1)} runs/s, workers ${((after.below - before[name].below) / timed[name].runs).toFixed(2)})`;
      });
      process.stdout.write(`round ${round}, load average ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}: ${line.join("; ")}\n`);
    } finally {
      for (const server of Object.values(servers)) await server.stop();
    }
  }
  const mean = (list) => list.reduce((sum, value) => sum + value, 0) / list.length;
  const ratios = readings.A.map((a, i) => readings.B[i] / a).sort((x, y) => x - y);
  process.stdout.write(
    `http_cpu_ms_per_run: A ${mean(readings.A).toFixed(2)}, B ${mean(readings.B).toFixed(2)}; B/A mean ${(mean(readings.B) / mean(readings.A)).toFixed(3)}, per round ${ratios.map((r) => r.toFixed(3)).join(" ")}\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
