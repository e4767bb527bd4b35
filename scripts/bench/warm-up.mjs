// How long serve's CPU per run takes to settle: the same build served twice at once (the bench's tenant and workload,
// scripts/bench/http-workload.mjs, --store :memory:), both after the first 10 runs, then one given `--short` and
// the other `--long` more untimed runs per client, then both timed at once (so both see the same load). What
// WARM_UP_RUNS in http-workload.mjs was chosen by: a figure that still falls with a longer warm-up was not steady.
// node scripts/bench/warm-up.mjs [--dir DIR] [--short N] [--long N] [--rounds N] [--clients N] [--runs-per-client N]
// (DIR: a checkout with its dist built, default this one; N runs per client, default --short 0 --long 12).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    dir: { type: "string" },
    short: { type: "string" },
    long: { type: "string" },
    rounds: { type: "string" },
    clients: { type: "string" },
    "runs-per-client": { type: "string" },
  },
});
const root = resolve(values.dir ?? join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const workload = await import(pathToFileURL(join(root, "scripts/bench/http-workload.mjs")).href);
const { treeCpuMs } = await import(pathToFileURL(join(root, "scripts/bench/proc-cpu.mjs")).href);
const clients = Number(values.clients ?? 50);
const runsPerClient = Number(values["runs-per-client"] ?? 4);
const extra = { short: Number(values.short ?? 0), long: Number(values.long ?? 12) };
const work = mkdtempSync(join(tmpdir(), "hookbox-warm-up-"));
try {
  for (let round = 1; round <= Number(values.rounds ?? 3); round++) {
    const servers = {};
    try {
      for (const name of ["short", "long"]) {
        const dir = mkdtempSync(join(work, `${name}-`));
        workload.writeTenant(dir);
        servers[name] = await workload.startServe(dir, ":memory:");
      }
      await Promise.all(Object.values(servers).map((server) => workload.warmUp([server.url], clients)));
      await Promise.all(
        Object.entries(servers).map(([name, server]) =>
          extra[name] > 0 ? workload.timedRuns([server.url], { clients, runsPerClient: extra[name] }) : undefined,
        ),
      );
      const before = Object.fromEntries(Object.entries(servers).map(([name, server]) => [name, treeCpuMs(server.pid).own]));
      const timed = Object.fromEntries(
        await Promise.all(
          Object.entries(servers).map(async ([name, server]) => [name, await workload.timedRuns([server.url], { clients, runsPerClient })]),
        ),
      );
      const line = Object.entries(servers).map(
        ([name, server]) =>
          `${extra[name]} more a client: ${((treeCpuMs(server.pid).own - before[name]) / timed[name].runs).toFixed(2)} ms/run`,
      );
      process.stdout.write(`round ${round}, load average ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}: ${line.join("; ")}\n`);
    } finally {
      for (const server of Object.values(servers)) await server.stop();
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
