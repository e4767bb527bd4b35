// What serve allocates per run of the bench's workload (http-workload.mjs), by the function that allocated it: serve
// runs with heap-sampler.mjs preloaded, warms up as the bench does, then samples every allocation over the timed runs
// (objects the garbage collector took meanwhile included: the young generation's churn, which the scavenges pay for).
// Prints the sampled bytes a run, then the top sites, each a function at its source line (through dist's source maps).
// node scripts/bench/serve-allocations.mjs [--runs-per-client N] [--clients N] [--top N] (after npm run build).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { placeOf } from "./source-place.mjs";
import { startServe, timedRuns, warmUp, WARM_UP_RUNS, writeTenant } from "./http-workload.mjs";

const { values } = parseArgs({ options: { "runs-per-client": { type: "string" }, clients: { type: "string" }, top: { type: "string" } } });
const clients = Number(values.clients ?? 50);
const work = mkdtempSync(join(tmpdir(), "hookbox-serve-allocations-"));
const samples = join(work, "heap.json");
process.env.HOOKBOX_HEAP_SAMPLES = samples;

/** `function file:line` of a profile node's frame: a hookbox source through the source maps, else the package or file. */
function site(frame) {
  const name = frame.functionName || "(anonymous)";
  if (!frame.url.startsWith("file://")) return `${name} ${frame.url || "(native)"}`;
  const place = placeOf(fileURLToPath(frame.url), frame.lineNumber, frame.columnNumber);
  return `${name} ${place.file}${place.line === undefined ? "" : `:${place.line}`}`;
}

let server;
try {
  writeTenant(work);
  server = await startServe(work, join(work, "bench.db"), {
    nodeArgs: ["--import", fileURLToPath(new URL("./heap-sampler.mjs", import.meta.url))],
  });
  await warmUp([server.url], clients, { runs: WARM_UP_RUNS });
  writeFileSync(`${samples}.start`, "");
  await new Promise((resolve) => setTimeout(resolve, 300)); // the sampler's poll
  const timed = await timedRuns([server.url], { clients, runsPerClient: Number(values["runs-per-client"] ?? 20) });
  writeFileSync(`${samples}.stop`, "");
  while (!existsSync(samples)) await new Promise((resolve) => setTimeout(resolve, 100));
  await new Promise((resolve) => setTimeout(resolve, 200)); // written whole
  const bySite = new Map();
  let total = 0;
  // A builtin's allocation (a Map, a Promise, an array's join) is named with the function that called it.
  const walk = (node, caller) => {
    let key = site(node.callFrame);
    if (!node.callFrame.url && caller) key = `${key} <- ${caller}`;
    total += node.selfSize;
    bySite.set(key, (bySite.get(key) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, node.callFrame.url ? site(node.callFrame) : caller);
  };
  walk(JSON.parse(readFileSync(samples, "utf8")).head, undefined);
  const perRun = (bytes) => Math.round(bytes / timed.runs);
  const lines = [...bySite]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(values.top ?? 40))
    .map(([key, bytes]) => `${String(perRun(bytes)).padStart(8)} B/run  ${key}`);
  process.stdout.write(`serve: ${timed.runs} timed runs, ${perRun(total)} bytes sampled a run\n\n${lines.join("\n")}\n`);
} finally {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
}
