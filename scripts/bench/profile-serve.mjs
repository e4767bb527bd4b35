// A CPU profile of `hookbox serve` under the bench's HTTP workload (scripts/bench/http-workload.mjs): serve runs
// with --cpu-prof, the clients run, serve stops on SIGTERM and writes the profile. Prints where serve's CPU went:
// self time by source file of hookbox (through dist's source maps) or package, and the hottest functions.
// With --owners, a third table charges each sample to its owner: the nearest frame above it (itself included) in a
// hookbox source folder (src/store, src/server, ...) or in hono, so Node's socket writes under hono's response
// count as hono's and a statement under the store as the store's.
// node scripts/bench/profile-serve.mjs [--clients N] [--runs-per-client N] [--store memory|file] [--keep DIR] [--top N]
//   [--owners] (after npm run build). --keep leaves the .cpuprofile in DIR (open it in Chrome DevTools or speedscope).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { placeOf as sourcePlace } from "./source-place.mjs";
import { httpWorkload, round, writeTenant } from "./http-workload.mjs";

const { values } = parseArgs({
  options: {
    clients: { type: "string" },
    "runs-per-client": { type: "string" },
    store: { type: "string" },
    keep: { type: "string" },
    top: { type: "string" },
    owners: { type: "boolean" },
  },
});
const work = mkdtempSync(join(tmpdir(), "hookbox-profile-"));
const profiles = values.keep ?? join(work, "profiles");

/** The hookbox source file (src/...) a position of a dist file comes from, else the package or Node part. */
function placeOf(url, line, column) {
  if (!url) return "(native)";
  if (url.startsWith("node:")) return "node:" + url.slice(5).split("/")[0];
  return sourcePlace(url.startsWith("file://") ? fileURLToPath(url) : url, line, column).file;
}

try {
  writeTenant(work);
  const store = values.store === "memory" ? ":memory:" : join(work, "bench.db");
  const measured = await httpWorkload(work, store, {
    clients: Number(values.clients ?? 50),
    runsPerClient: Number(values["runs-per-client"] ?? 4),
    nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profiles}`],
  });
  const file = readdirSync(profiles).find((name) => name.endsWith(".cpuprofile"));
  if (!file) throw new Error(`serve wrote no profile in ${profiles}`);
  const profile = JSON.parse(readFileSync(join(profiles, file), "utf8"));
  const totalUs = profile.endTime - profile.startTime;
  const perSample = totalUs / profile.samples.length;
  const byPlace = new Map();
  const byFunction = new Map();
  let idleUs = 0;
  for (const node of profile.nodes) {
    const us = node.hitCount * perSample;
    if (us === 0) continue;
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idleUs += us;
      continue;
    }
    const place = placeOf(url, lineNumber, columnNumber);
    byPlace.set(place, (byPlace.get(place) ?? 0) + us);
    const name = `${functionName || "(anonymous)"} ${place}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const byOwner = new Map();
  if (values.owners) {
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const parents = new Map(profile.nodes.flatMap((node) => (node.children ?? []).map((child) => [child, node])));
    for (const node of profile.nodes) {
      if (node.hitCount === 0 || node.callFrame.functionName === "(idle)") continue;
      let owner = "(no hookbox or hono frame)";
      for (let at = nodes.get(node.id); at; at = parents.get(at.id)) {
        const { url, lineNumber, columnNumber } = at.callFrame;
        const place = placeOf(url, lineNumber, columnNumber);
        if (place.startsWith("src/")) {
          owner = place.split("/").slice(0, 2).join("/");
          break;
        }
        if (place === "hono" || place === "@hono/node-server") {
          owner = place;
          break;
        }
      }
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + node.hitCount * perSample);
    }
  }
  const top = Number(values.top ?? 25);
  const table = (map) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => `  ${(us / 1000).toFixed(0).padStart(7)} ms  ${((100 * us) / busyUs).toFixed(1).padStart(5)}%  ${name}`)
      .join("\n");
  process.stdout.write(
    `serve: ${measured.runs} timed runs (${round(measured.runsPerS)} runs/s), ${round(measured.cpuMsPerRun, 2)} ms CPU per run, workers ${round(measured.workerCpuMsPerRun, 2)} ms\n` +
      `profile: ${(totalUs / 1e6).toFixed(1)} s, busy ${(busyUs / 1e6).toFixed(1)} s (warm-up included)\n\nself time by file:\n${table(byPlace)}\n\nhottest functions:\n${table(byFunction)}\n` +
      (values.owners ? `\nby owner (the nearest hookbox folder or hono frame above):\n${table(byOwner)}\n` : ""),
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
