// The host's allocations per tool call of loop_tool_calls_per_s: `node scripts/bench/loop-allocations.mjs` (after
// `npm run build`) runs scripts/bench/loop-throughput.mjs's workload with the inspector's allocation sampler on
// (`HeapProfiler.startSampling`, objects later collected by a minor or a major GC included) over the measured rounds
// only, and prints one JSON object: `loop_host_bytes_per_call` (sampled bytes / tool calls) and the largest sources,
// by function (self bytes per call, with the frames that called it).
// `--dist DIR`: another build (A/B); `--rounds N` (default 5); `--top N` (default 25); `--depth N` frames of stack
// per source (default 6); `--interval BYTES` the sampling interval (default 512: smaller is finer and slower);
// `--module PATH`: the bytes of the stacks through that module (e.g. src/turns/typed-key.ts), by caller.
// `--gc`: no sampler; the main thread's GC pauses over the measured rounds instead (`loop_gc_pause_us_per_call`,
// and the scavenges and mark-compacts per 1,000 tool calls), from `PerformanceObserver` gc entries.
import { existsSync, readFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { SourceMap } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { measureLoopToolCallsPerSecond } from "./loop-throughput.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const dist = resolve(option("--dist", join(root, "dist")));
const rounds = Number(option("--rounds", "5"));
const top = Number(option("--top", "25"));
const depth = Number(option("--depth", "6"));
const interval = Number(option("--interval", "512"));
const throughModule = option("--module", undefined);
/** The bench's workload (loop-throughput.mjs), measured over `rounds` rounds. */
const workload = { dist, rounds, concurrentRuns: 8, iterations: 10, callsPerIteration: 10 };

const calls = rounds * workload.concurrentRuns * workload.iterations * workload.callsPerIteration;
if (process.argv.includes("--gc")) {
  const { PerformanceObserver, constants } = await import("node:perf_hooks");
  let measuring = false;
  const pauses = { ms: 0, minor: 0, major: 0 };
  const observer = new PerformanceObserver((list) => {
    if (!measuring) return;
    for (const entry of list.getEntries()) {
      pauses.ms += entry.duration;
      if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) pauses.minor++;
      else if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) pauses.major++;
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  const callsPerSecond = await measureLoopToolCallsPerSecond({
    ...workload,
    onMeasure: { start: () => (measuring = true), end: () => setImmediate(() => (measuring = false)) },
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  process.stdout.write(
    `${JSON.stringify({
      dist,
      rounds,
      loop_tool_calls_per_s: Math.round(callsPerSecond),
      loop_gc_pause_us_per_call: Math.round((pauses.ms * 1000 * 10) / calls) / 10,
      scavenges_per_1000_calls: Math.round((pauses.minor * 1000 * 10) / calls) / 10,
      mark_compacts_per_1000_calls: Math.round((pauses.major * 1000 * 10) / calls) / 10,
    })}\n`,
  );
  process.exit(0);
}

const session = new Session();
session.connect();
let profile;
const callsPerSecond = await measureLoopToolCallsPerSecond({
  ...workload,
  onMeasure: {
    start: () =>
      session.post("HeapProfiler.startSampling", {
        samplingInterval: interval,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      }),
    end: (started) => {
      profile = started.then(() => session.post("HeapProfiler.stopSampling"));
    },
  },
});
const { profile: sampled } = await profile;
session.disconnect();

// A frame in the build is named by its place in src/ (the build's source maps), others by their file.
const sourceMaps = new Map();
const sourceMapOf = (url) => {
  if (!sourceMaps.has(url)) {
    const file = url.startsWith("file://") ? fileURLToPath(url) : "";
    sourceMaps.set(url, file && existsSync(`${file}.map`) ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8"))) : null);
  }
  return sourceMaps.get(url);
};
const frameName = (frame) => {
  const entry = frame.url ? sourceMapOf(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber) : undefined;
  if (entry?.originalSource) {
    const source = entry.originalSource.replace(/^.*?\/src\//, "src/");
    return `${frame.functionName || entry.name || "(anonymous)"} ${source}:${entry.originalLine + 1}`;
  }
  const file = frame.url ? frame.url.replace(/^.*\/(dist|node_modules)\//, "$1/").replace(/^node:/, "") : "";
  return `${frame.functionName || "(anonymous)"} ${file}:${frame.lineNumber + 1}`;
};
// Self bytes by function, and by (function + the frames above it) for the stacks; and by the nearest src/ module
// on the stack (what a module's code allocates, in Node's built-ins included).
const bySource = new Map();
const byModule = new Map();
const throughStacks = new Map();
let total = 0;
const walk = (node, stack) => {
  const here = [frameName(node.callFrame), ...stack];
  if (node.selfSize > 0) {
    total += node.selfSize;
    const key = here[0];
    const entry = bySource.get(key) ?? { bytes: 0, stacks: new Map() };
    entry.bytes += node.selfSize;
    const stackKey = here.slice(1, depth).join(" < ");
    entry.stacks.set(stackKey, (entry.stacks.get(stackKey) ?? 0) + node.selfSize);
    bySource.set(key, entry);
    const module = here.find((frame) => / src\//.test(frame))?.replace(/^.* (src\/[^:]*):.*$/, "$1") ?? "(outside src/)";
    byModule.set(module, (byModule.get(module) ?? 0) + node.selfSize);
    const through = throughModule ? here.findIndex((frame) => frame.includes(` ${throughModule}:`)) : -1;
    if (through >= 0) {
      const stack = here.slice(through, through + depth).join(" < ");
      throughStacks.set(stack, (throughStacks.get(stack) ?? 0) + node.selfSize);
    }
  }
  for (const child of node.children) walk(child, here);
};
walk(sampled.head, []);

const perCall = (bytes) => Math.round(bytes / calls);
const sources = [...bySource.entries()]
  .sort((a, b) => b[1].bytes - a[1].bytes)
  .slice(0, top)
  .map(([where, entry]) => ({
    where,
    bytes_per_call: perCall(entry.bytes),
    stacks: [...entry.stacks.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([stack, bytes]) => `${perCall(bytes)} B: ${stack}`),
  }));
process.stdout.write(
  `${JSON.stringify(
    {
      dist,
      rounds,
      tool_calls: calls,
      loop_tool_calls_per_s: Math.round(callsPerSecond),
      loop_host_bytes_per_call: perCall(total),
      modules: Object.fromEntries(
        [...byModule.entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, top)
          .map(([module, bytes]) => [module, perCall(bytes)]),
      ),
      ...(throughModule
        ? {
            through: [...throughStacks.entries()]
              .sort((a, b) => b[1] - a[1])
              .slice(0, top)
              .map(([stack, bytes]) => `${perCall(bytes)} B: ${stack}`),
          }
        : {}),
      sources,
    },
    null,
    2,
  )}\n`,
);
