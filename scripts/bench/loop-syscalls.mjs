// The pipe traffic under loop_tool_calls_per_s: `node scripts/bench/loop-syscalls.mjs [--dist DIR]` (after
// `npm run build`) runs the loop bench (scripts/bench/loop-throughput.mjs, 5 rounds) and prints one JSON object with
// the read(2) and write(2) calls per tool call of the host process and of its worker processes together, from
// `syscr`/`syscw` in /proc/PID/io over the measured rounds. Each write wakes the other side, and each wake-up is a
// read and a decode there; the reads include the empty ones of polling (the host's reply wait, the worker's poll).
// Linux only. `--dist DIR`: another build (A/B).
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { measureLoopToolCallsPerSecond } from "./loop-throughput.mjs";
import { descendants } from "./proc-cpu.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const distArgument = process.argv.indexOf("--dist");
const dist = resolve(distArgument > 0 ? process.argv[distArgument + 1] : join(root, "dist"));

/** read(2) and write(2) calls of `pid` so far. */
function syscalls(pid) {
  const text = readFileSync(`/proc/${pid}/io`, "utf8");
  return { reads: Number(/^syscr: (\d+)$/m.exec(text)[1]), writes: Number(/^syscw: (\d+)$/m.exec(text)[1]) };
}

function counts() {
  const workers = { reads: 0, writes: 0 };
  for (const pid of descendants(process.pid)) {
    try {
      const own = syscalls(pid);
      workers.reads += own.reads;
      workers.writes += own.writes;
    } catch {
      // gone meanwhile
    }
  }
  return { host: syscalls(process.pid), workers };
}

const rounds = 5;
let used;
await measureLoopToolCallsPerSecond({
  dist,
  rounds,
  onMeasure: {
    start: counts,
    end: (from) => {
      const to = counts();
      used = {
        host: { reads: to.host.reads - from.host.reads, writes: to.host.writes - from.host.writes },
        workers: { reads: to.workers.reads - from.workers.reads, writes: to.workers.writes - from.workers.writes },
      };
    },
  },
});
const calls = rounds * 8 * 10 * 10;
const per = (count) => Math.round((count / calls) * 100) / 100;
process.stdout.write(
  `${JSON.stringify({
    dist,
    host_writes_per_call: per(used.host.writes),
    host_reads_per_call: per(used.host.reads),
    worker_writes_per_call: per(used.workers.writes),
    worker_reads_per_call: per(used.workers.reads),
  })}\n`,
);
process.exit(0);
