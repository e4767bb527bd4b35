// What one hook round trip costs, in measures a loaded machine moves little: the CPU time of the host and of
// its sandbox worker per call (every thread, /proc/PID/task/TID/schedstat), the context switches per call of
// each side (a side that sleeps between calls switches; one whose polling catches the message does not), and
// the worker's mean time per message (from its replies), beside the round trip's min, p10 and p50.
//   node scripts/bench/hook-cost.mjs                 (after `npm run build`) this tree, 1000 warm-up + 5000 calls
// Options: --root DIR      a built checkout to measure instead (both walls, same payload: for old/new comparisons)
//          --calls N       measured calls (default 5000)
//          --no-poll       both sides sleep between messages (HOOKBOX_REPLY_SPIN_US=0, HOOKBOX_WORKER_POLL_US=0):
//                          the CPU figures are then the work of a call, no polling in them
//          --realtime      (root) host and worker threads run SCHED_FIFO during the measured calls only: no other
//                          process on the machine can preempt either side, so the round trip is what it is on a
//                          quiet machine with a CPU for each side (a proxy for a quiet reading on a shared box)
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { cpuMs, descendants } from "./proc-cpu.mjs";

const { values } = parseArgs({
  options: {
    root: { type: "string" },
    calls: { type: "string" },
    "no-poll": { type: "boolean" },
    realtime: { type: "boolean" },
  },
});
const root = resolve(values.root ?? join(import.meta.dirname, "../.."));
const calls = Number(values.calls ?? 5000);
if (values["no-poll"]) {
  // Read when the host's modules load and when a worker starts: set before either.
  process.env.HOOKBOX_REPLY_SPIN_US = "0";
  process.env.HOOKBOX_WORKER_POLL_US = "0";
}
if (values.realtime && process.getuid?.() !== 0) throw new Error("--realtime needs root (SCHED_FIFO)");

// The measured tree's own fixtures, so an older checkout is measured with the payload it was measured with.
const { HOOK_BODY, percentile, smallPayload } = await import(pathToFileURL(join(root, "scripts/bench/fixtures.mjs")).href);
const { createSandboxPool } = await import(pathToFileURL(join(root, "dist/index.js")).href);

/** Context switches (voluntary and not) of every live thread of `pid`. */
function switches(pid) {
  let count = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const status = readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
        for (const match of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)) count += Number(match[1]);
      } catch {
        /* the thread ended */
      }
    }
  } catch {
    /* the process ended */
  }
  return count;
}

const reading = (pids) => ({
  cpuMs: pids.reduce((sum, pid) => sum + cpuMs(pid), 0),
  switches: pids.reduce((sum, pid) => sum + switches(pid), 0),
});

/** SCHED_FIFO (priority 10) or back to SCHED_OTHER for every thread of `pids`. */
function schedule(pids, realtime) {
  for (const pid of pids) {
    const result = spawnSync("chrt", ["-a", realtime ? "-f" : "-o", "-p", realtime ? "10" : "0", String(pid)], { encoding: "utf8" });
    if (result.status !== 0) throw new Error(`chrt ${pid}: ${result.stderr.trim()}`);
  }
}

const pool = createSandboxPool({ workers: 1, prewarm: true });
const sandbox = pool.tenant("cost");
const manifests = await sandbox.load([
  { source: `export default { hooks: { beforeToolCall(p) { ${HOOK_BODY} } } };`, filename: join(root, "policy.ts") },
]);
const run = await sandbox.openRun({ runId: "cost", scripts: manifests });
const call = () => run.callHook("policy", "beforeToolCall", smallPayload);
for (let i = 0; i < 1000; i++) await call();

// The worker's whole tree (bwrap, the sandbox's init, Node); the host's other children (esbuild) are not it.
const [info] = pool.workers();
const workerPids = [info.launchedPid, ...descendants(info.launchedPid)];
if (values.realtime) {
  schedule([process.pid, ...workerPids], true);
  for (let i = 0; i < 1000; i++) await call(); // settle under the new policy
}
const repliesBefore = { mean: pool.workers()[0].meanWorkerMs };
const host0 = reading([process.pid]);
const worker0 = reading(workerPids);
const samples = [];
for (let i = 0; i < calls; i++) {
  const started = performance.now();
  await call();
  samples.push(performance.now() - started);
}
const host1 = reading([process.pid]);
const worker1 = reading(workerPids);
const meanAfter = pool.workers()[0].meanWorkerMs;
if (values.realtime) schedule([process.pid, ...workerPids], false);

// meanWorkerMs covers every reply so far: the warm-up's (and the load's), then these calls'.
const before = values.realtime ? 2001 : 1001;
const us = (ms) => Math.round(ms * 10000) / 10;
const perCall = (value) => Math.round((value / calls) * 100) / 100;
console.log(
  JSON.stringify({
    root,
    node_version: process.version,
    wall: pool.wall,
    polling: !values["no-poll"],
    realtime: Boolean(values.realtime),
    calls,
    roundtrip_us_min: us(Math.min(...samples)),
    roundtrip_us_p10: us(percentile(samples, 10)),
    roundtrip_us_p50: us(percentile(samples, 50)),
    host_cpu_us_per_call: us((host1.cpuMs - host0.cpuMs) / calls),
    worker_cpu_us_per_call: us((worker1.cpuMs - worker0.cpuMs) / calls),
    host_switches_per_call: perCall(host1.switches - host0.switches),
    worker_switches_per_call: perCall(worker1.switches - worker0.switches),
    worker_us_per_message_mean: us((meanAfter * (before + calls) - repliesBefore.mean * before) / calls),
  }),
);
await pool.close();
process.exit(0);
