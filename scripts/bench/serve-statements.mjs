// What serve's SQLite statements cost a run of the bench's workload (http-workload.mjs): serve runs with
// statement-timer.mjs preloaded, warms up as the bench does, then times every statement over the timed runs.
// Prints each statement's calls, microseconds a run and its slowest call, and the total: the store's part of http_cpu_ms_per_run
// that SQLite itself spends (the JS around each statement not included; the timer's own two clock reads a call are).
// node scripts/bench/serve-statements.mjs [--runs-per-client N] [--clients N] [--store memory|file] [--top N]
// (after npm run build).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startServe, timedRuns, warmUp, WARM_UP_RUNS, writeTenant } from "./http-workload.mjs";

const { values } = parseArgs({
  options: { "runs-per-client": { type: "string" }, clients: { type: "string" }, store: { type: "string" }, top: { type: "string" } },
});
const clients = Number(values.clients ?? 50);
const work = mkdtempSync(join(tmpdir(), "hookbox-serve-statements-"));
const output = join(work, "times.json");
process.env.HOOKBOX_STATEMENT_TIMES = output;
try {
  writeTenant(work);
  const timer = join(dirname(fileURLToPath(import.meta.url)), "statement-timer.mjs");
  const server = await startServe(work, values.store === "memory" ? ":memory:" : join(work, "bench.db"), {
    nodeArgs: ["--import", timer],
  });
  let runs;
  let timesText;
  try {
    await warmUp([server.url], clients, { runs: WARM_UP_RUNS });
    process.kill(server.pid, "SIGUSR2");
    ({ runs } = await timedRuns([server.url], { clients, runsPerClient: Number(values["runs-per-client"] ?? 10) }));
    process.kill(server.pid, "SIGUSR2");
    for (let waited = 0; waited < 50; waited++) {
      try {
        timesText = readFileSync(output, "utf8");
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    await server.stop();
  }
  if (timesText === undefined) throw new Error(`serve wrote no statement times to ${output} (statement-timer.mjs) within 5 s`);
  const rows = JSON.parse(timesText).sort((a, b) => b[1].ns - a[1].ns);
  let totalUs = 0;
  for (const [sql, { calls, ns, maxNs }] of rows.slice(0, Number(values.top ?? 25))) {
    const usPerRun = ns / 1000 / runs;
    process.stdout.write(
      `${usPerRun.toFixed(1).padStart(7)} us a run ${(calls / runs).toFixed(2).padStart(6)} calls ${(ns / 1000 / calls).toFixed(1).padStart(6)} us each ${(maxNs / 1000).toFixed(0).padStart(6)} us max  ${sql.slice(0, 80)}\n`,
    );
  }
  for (const [, { ns }] of rows) totalUs += ns / 1000 / runs;
  process.stdout.write(`total: ${totalUs.toFixed(0)} us a run in SQLite statements over ${runs} runs\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
