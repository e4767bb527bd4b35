// Where a hook round trip's time goes, against its floors: `node scripts/bench/hook-floor.mjs` (after
// `npm run build`) prints one JSON object (microseconds, p50 of 5000 calls after 1000 warm-up):
// - bare_async_apply_us: isolated-vm `Reference.apply` (async), the same function as bench.mjs's baseline;
// - bare_apply_sync_us: the same call with `applySync` (what the worker does, in place);
// - process_hop_us: a 64-byte ping-pong with a forked child that answers at once (no isolate, no polling):
//   the cost of crossing to another process and back on this machine;
// - hook_roundtrip_us: hookbox's own round trip (host -> worker -> isolate -> host, validation included).
import { spawn, spawnSync } from "node:child_process";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { HOOK_BODY, percentile, smallPayload } from "./fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const us = (ms) => Math.round(ms * 10000) / 10;

/** Both bare figures, in a child started with --no-node-snapshot (isolated-vm needs it). */
function bare() {
  const source = `
    const ivm = require("isolated-vm");
    (async () => {
      const isolate = new ivm.Isolate({ memoryLimit: 64 });
      const context = await isolate.createContext();
      const hook = await context.eval(${JSON.stringify(`(function (text) { const p = JSON.parse(text); const r = (function (p) { ${HOOK_BODY} })(p); return JSON.stringify(r); })`)}, { reference: true });
      const payload = ${JSON.stringify(JSON.stringify(smallPayload))};
      const median = (s) => s.sort((a, b) => a - b)[s.length >> 1];
      const async = [], sync = [];
      for (let i = 0; i < 6000; i++) {
        const started = performance.now();
        JSON.parse(await hook.apply(undefined, [payload], { result: { copy: true } }));
        if (i >= 1000) async.push(performance.now() - started);
      }
      for (let i = 0; i < 6000; i++) {
        const started = performance.now();
        JSON.parse(hook.applySync(undefined, [payload], { result: { copy: true } }));
        if (i >= 1000) sync.push(performance.now() - started);
      }
      process.stdout.write(JSON.stringify({ async: median(async), sync: median(sync) }));
    })();`;
  const result = spawnSync(process.execPath, ["--no-node-snapshot", "-e", source], { cwd: root, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`bare isolated-vm failed: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

async function processHop() {
  const child = spawn(process.execPath, ["-e", `process.on("message", (m) => process.send(m));`], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    serialization: "advanced",
  });
  const message = "x".repeat(64);
  const samples = [];
  for (let i = 0; i < 6000; i++) {
    const started = performance.now();
    await new Promise((resolve) => {
      child.once("message", resolve);
      child.send(message);
    });
    if (i >= 1000) samples.push(performance.now() - started);
  }
  child.kill();
  return percentile(samples, 50);
}

async function hookRoundTrip() {
  const { createSandboxPool } = await import(pathToFileURL(join(root, "dist/index.js")).href);
  const pool = createSandboxPool({ workers: 1, prewarm: true });
  const sandbox = pool.tenant("floor");
  const manifests = await sandbox.load([
    { source: `export default { hooks: { beforeToolCall(p) { ${HOOK_BODY} } } };`, filename: join(root, "policy.ts") },
  ]);
  const run = await sandbox.openRun({ runId: "floor", scripts: manifests });
  const samples = [];
  for (let i = 0; i < 6000; i++) {
    const started = performance.now();
    await run.callHook("policy", "beforeToolCall", smallPayload);
    if (i >= 1000) samples.push(performance.now() - started);
  }
  await pool.close();
  return percentile(samples, 50);
}

const { async, sync } = bare();
const hop = await processHop();
const hook = await hookRoundTrip();
process.stdout.write(
  `${JSON.stringify({ node_version: process.version, bare_async_apply_us: us(async), bare_apply_sync_us: us(sync), process_hop_us: us(hop), hook_roundtrip_us: us(hook) })}\n`,
);
process.exit(0);
