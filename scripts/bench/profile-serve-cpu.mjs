// Where serve's CPU goes per run, counted on the CPU: Linux `perf record` samples `hookbox serve` (all its
// threads, kernel included) over the timed part of the bench's HTTP workload (scripts/bench/http-workload.mjs),
// after the bench's warm-up (http-workload.mjs WARM_UP_RUNS, so V8 has compiled the path). Unlike
// profile-serve.mjs (V8's sampler, which counts a descheduled thread where it stopped, so a syscall that wakes
// another process looks expensive on a loaded machine), only time spent running is counted. Prints CPU ms per run, then each sample's owner: the nearest
// JS frame (a hookbox source file through dist's source maps, a Node module, a package), SQLite's native code
// (its syscalls included) or the garbage collector; then hookbox functions by inclusive time.
// With --native REGEX, a third table: the samples in native code whose symbol matches (e.g. `JsonStringif`, V8's
// JSON.stringify), charged to the nearest hookbox function that called into it.
// node scripts/bench/profile-serve-cpu.mjs [--clients N] [--runs-per-client N] [--store memory|file] [--top N] [--native REGEX]
// (after npm run build; needs `perf`, Debian package linux-perf, and permission to record: root, or
// kernel.perf_event_paranoid <= 1).
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { placeOf } from "./source-place.mjs";
import { round, startServe, timedRuns, warmUp, WARM_UP_RUNS, writeTenant } from "./http-workload.mjs";
import { treeCpuMs } from "./proc-cpu.mjs";

const { values } = parseArgs({
  options: {
    clients: { type: "string" },
    "runs-per-client": { type: "string" },
    store: { type: "string" },
    top: { type: "string" },
    native: { type: "string" },
  },
});
const clients = Number(values.clients ?? 50);
const top = Number(values.top ?? 30);
const native = values.native === undefined ? undefined : new RegExp(values.native);
if (spawnSync("perf", ["--version"]).status !== 0) {
  process.stderr.write("profile-serve-cpu: needs Linux perf on PATH (Debian: apt-get install linux-perf)\n");
  process.exit(2);
}

/** The owner of a JIT frame `JS:<tier>name url:line:col`: a hookbox source file[:line name], a Node module or a package. */
function ownerOf(frame, withFunction) {
  const match = /^JS:[~^+*']*'?(\S*) ((?:file:\/\/\/|node:)\S+):(\d+):(\d+)$/.exec(frame);
  if (!match) return undefined;
  const [, name, url, line, column] = match;
  if (url.startsWith("node:")) return { owner: url.replace(/:\d+:\d+$/, "").replace("node:internal/", "node:"), hookbox: false };
  const place = placeOf(fileURLToPath(url), Number(line) - 1, Number(column) - 1);
  if (!place.hookbox) return { owner: place.file, hookbox: false };
  return { owner: withFunction ? `${place.file}:${place.line ?? 1} ${name || "(anonymous)"}` : place.file, hookbox: true };
}

const SQLITE = /^(sqlite3|wal[A-Z]|pager|vdbe|unix[A-Z])|[bB]tree|pcache|node::sqlite::/;
const GC = /Scavenger|MarkCompact|Heap::|ConcurrentMarking|MinorMS|Sweeper|GCTracer/;

/** Samples of `perf script` output: the thread and the frames, innermost first. */
function* samples(text) {
  for (const block of text.split("\n\n")) {
    const lines = block.split("\n");
    const frames = lines
      .slice(1)
      .filter((line) => /^\s/.test(line))
      .map((line) =>
        line
          .trim()
          .replace(/^[0-9a-f]+ /, "")
          .replace(/ \(\S+\)$/, "")
          .replace(/\+0x[0-9a-f]+$/, ""),
      );
    if (frames.length > 0) yield { thread: lines[0].split(" ")[0], frames };
  }
}

const work = mkdtempSync(join(tmpdir(), "hookbox-profile-cpu-"));
let server;
try {
  writeTenant(work);
  server = await startServe(work, values.store === "memory" ? ":memory:" : join(work, "bench.db"), {
    nodeArgs: ["--perf-basic-prof-only-functions"],
  });
  await warmUp([server.url], clients, { runs: WARM_UP_RUNS });
  const data = join(work, "perf.data");
  const recorder = spawn("perf", ["record", "-F", "999", "-g", "-p", String(server.pid), "-o", data], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let recorderErr = "";
  recorder.stderr.on("data", (chunk) => (recorderErr += chunk));
  await new Promise((resolve) => setTimeout(resolve, 500)); // perf attaches
  const before = treeCpuMs(server.pid);
  const timed = await timedRuns([server.url], { clients, runsPerClient: Number(values["runs-per-client"] ?? 6) });
  const cpuMsPerRun = (treeCpuMs(server.pid).own - before.own) / timed.runs;
  recorder.kill("SIGINT");
  const code = await new Promise((resolve) => recorder.on("exit", (exitCode, signal) => resolve(exitCode ?? signal)));
  if (code !== 0 && code !== "SIGINT") throw new Error(`perf record failed (${code}): ${recorderErr}`);
  const script = spawnSync("perf", ["script", "-i", data], { encoding: "utf8", maxBuffer: 1 << 30 });
  if (script.status !== 0) throw new Error(`perf script failed: ${script.stderr}`);

  let total = 0;
  const byOwner = new Map();
  const inclusive = new Map();
  const nativeCallers = new Map();
  const add = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
  for (const { thread, frames } of samples(script.stdout)) {
    total += 1;
    let owner = thread === "node-MainThread" ? undefined : `(thread ${thread})`;
    for (const frame of frames) {
      if (owner) break;
      if (SQLITE.test(frame)) owner = "(SQLite native, its syscalls included)";
      else if (GC.test(frame)) owner = "(garbage collector, main thread)";
      else if (frame.startsWith("JS:")) owner = ownerOf(frame, false)?.owner;
    }
    add(byOwner, owner ?? "(native, no JS frame)");
    // Each sample's hookbox functions, innermost first (each frame's source-map lookup made once).
    const hookboxFunctions = frames
      .map((frame) => (frame.startsWith("JS:") ? ownerOf(frame, true) : undefined))
      .filter((mapped) => mapped?.hookbox)
      .map((mapped) => mapped.owner);
    if (native) {
      // The native frames below the innermost JS frame: the sample is the symbol's when one of them matches.
      const firstJs = frames.findIndex((frame) => frame.startsWith("JS:"));
      if (frames.slice(0, firstJs < 0 ? frames.length : firstJs).some((frame) => native.test(frame)))
        add(nativeCallers, hookboxFunctions[0] ?? "(no hookbox frame)");
    }
    for (const name of new Set(hookboxFunctions)) add(inclusive, name);
  }
  const table = (map) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(
        ([name, n]) =>
          `  ${((100 * n) / total).toFixed(1).padStart(5)}%  ${((cpuMsPerRun * n) / total).toFixed(3).padStart(6)} ms/run  ${name}`,
      )
      .join("\n");
  process.stdout.write(
    `serve: ${timed.runs} timed runs (${round(timed.runsPerS)} runs/s), ${round(cpuMsPerRun, 2)} ms CPU per run, ${total} samples, load average ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}\n\n` +
      `self time by owner (nearest JS frame):\n${table(byOwner)}\n\nhookbox functions, inclusive:\n${table(inclusive)}\n`,
  );
  if (native) {
    const matched = [...nativeCallers.values()].reduce((sum, n) => sum + n, 0);
    process.stdout.write(
      `\nnative ${values.native}: ${((100 * matched) / total).toFixed(1)}% of the samples, by the nearest hookbox function:\n${table(nativeCallers)}\n`,
    );
  }
} finally {
  await server?.stop();
  if (server) rmSync(`/tmp/perf-${server.pid}.map`, { force: true });
  rmSync(work, { recursive: true, force: true });
}
