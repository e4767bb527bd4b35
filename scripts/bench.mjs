// `npm run bench [-- --json]`: measures the sandbox against the goals recorded in BENCHMARKS.md (keys: docs/bench.md), in one
// run on this machine. With --json, stdout carries exactly one JSON object; progress goes to stderr.
// Method and figures: BENCHMARKS.md. The tenancy figures (10,000 tenants) come from scripts/bench/tenancy.mjs.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { monitorEventLoopDelay } from "node:perf_hooks";
import vm from "node:vm";
import {
  countFailure,
  echoPayload,
  HOOK_BODY,
  massFailures,
  percentile,
  round,
  script,
  smallPayload,
  timeCalls,
} from "./bench/fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const json = process.argv.includes("--json");
const log = (...parts) => process.stderr.write(`${parts.join(" ")}\n`);

if (!process.argv.includes("--no-build")) {
  execFileSync(process.execPath, [join(root, "scripts/build.mjs")], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
}
const { createSandboxPool } = await import(pathToFileURL(join(root, "dist/index.js")).href);

// The payloads, the hook body and the helpers are shared with the finer scripts in scripts/bench/.
const echoBytes = JSON.stringify(echoPayload.result).length;

const policy = script(
  "policy",
  `import { defineScript } from "hookbox";
export default defineScript({
  tools: [{ name: "lookup_order", description: "Look up an order", parameters: { type: "object", properties: { id: { type: "string" } } },
    handler: async (args) => ({ id: args.id, total: 120 }) }],
  hooks: {
    beforeToolCall(p) { ${HOOK_BODY} },
    afterToolCall(p) { return { result: p.result }; },
  },
});`,
);

// --- hook round trip, echo, loop throughput (one pool) -------------------------------------------
async function sandboxLatency() {
  const pool = createSandboxPool({ workers: 2, prewarm: true });
  const tenant = pool.tenant("bench");
  const manifests = await tenant.load([policy]);
  const run = await tenant.openRun({ runId: "bench", scripts: manifests });
  await timeCalls(1000, () => run.callHook("policy", "beforeToolCall", smallPayload));
  const hook = await timeCalls(5000, () => run.callHook("policy", "beforeToolCall", smallPayload));
  log(`hook round trip: p50 ${round(percentile(hook, 50) * 1000)} us`);
  await timeCalls(30, () => run.callHook("policy", "afterToolCall", echoPayload));
  const echo = await timeCalls(200, () => run.callHook("policy", "afterToolCall", echoPayload));
  log(`echo ${echoBytes} bytes: p50 ${round(percentile(echo, 50))} ms`);
  await pool.close();
  const throughput = await realLoopThroughput().catch(async (error) => {
    log(`real loop unavailable (${error.message}); using the minimal harness`);
    const fallback = createSandboxPool({ workers: 2, prewarm: true });
    const fallbackManifests = await fallback.tenant("bench").load([policy]);
    const value = await loopThroughput(fallback, fallbackManifests);
    await fallback.close();
    return value;
  });
  log(`loop tool calls/s: ${Math.round(throughput)}`);
  return { hook, echo, throughput, wall: pool.wall };
}

/** loop_tool_calls_per_s through the real tool loop (scripts/bench/loop-throughput.mjs, the lead's harness). */
async function realLoopThroughput() {
  const { measureLoopToolCallsPerSecond } = await import("./bench/loop-throughput.mjs");
  return measureLoopToolCallsPerSecond({ dist: join(root, "dist") });
}

/** replay_calls_per_s: 10,000 recorded calls re-evaluated (scripts/bench/replay.mjs). */
async function replayThroughput() {
  const { measureReplayCallsPerSecond } = await import("./bench/replay.mjs");
  const measured = await measureReplayCallsPerSecond({ dist: join(root, "dist") });
  log(`replay: ${measured.calls} calls in ${round(measured.seconds, 2)} s`);
  return measured.callsPerSecond;
}

/**
 * A minimal stand-in for the tool loop (fallback when the real loop cannot run): 8 concurrent runs, each tool call = beforeToolCall + the
 * script's tool + afterToolCall through the sandbox. Swap for the real loop when it exists.
 */
async function loopThroughput(pool, manifests, { runs = 8, seconds = 3 } = {}) {
  const tenant = pool.tenant("bench");
  const deadline = performance.now() + seconds * 1000;
  let calls = 0;
  await Promise.all(
    Array.from({ length: runs }, async (_, index) => {
      const run = await tenant.openRun({ runId: `loop-${index}`, scripts: manifests });
      const ctx = {
        toolName: "lookup_order",
        callId: "c",
        sessionId: "s",
        inferenceId: "i",
        traceId: "t",
        turnId: "u",
        timestampMs: 1,
        attempt: 1,
        tags: {},
      };
      while (performance.now() < deadline) {
        const before = await run.callHook("policy", "beforeToolCall", smallPayload);
        const result = await run.callTool("policy", "lookup_order", before?.args ?? smallPayload.call.args, ctx);
        await run.callHook("policy", "afterToolCall", { ...smallPayload, phase: "afterToolCall", result, durationMs: 1 });
        calls++;
      }
      await run.close();
    }),
  );
  return calls / seconds;
}

// --- baselines -----------------------------------------------------------------------------------
function bareIvmAsyncApply() {
  // In its own process: isolated-vm wants --no-node-snapshot, which the bench process may lack.
  const source = `
    const ivm = require("isolated-vm");
    (async () => {
      const isolate = new ivm.Isolate({ memoryLimit: 64 });
      const context = await isolate.createContext();
      const hook = await context.eval(\`(function (text) { const p = JSON.parse(text); const r = (function (p) { ${HOOK_BODY.replace(/`/g, "\\`")} })(p); return JSON.stringify(r); })\`, { reference: true });
      const payload = ${JSON.stringify(JSON.stringify(smallPayload))};
      const samples = [];
      for (let i = 0; i < 6000; i++) {
        const started = performance.now();
        JSON.parse(await hook.apply(undefined, [payload], { result: { copy: true } }));
        if (i >= 1000) samples.push(performance.now() - started);
      }
      samples.sort((a, b) => a - b);
      process.stdout.write(JSON.stringify({ p50: samples[Math.floor(samples.length / 2)] }));
    })();`;
  const result = spawnSync(process.execPath, ["--no-node-snapshot", "-e", source], { cwd: root, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`bare ivm baseline failed: ${result.stderr}`);
  return JSON.parse(result.stdout).p50;
}

function nodeVmCall() {
  const context = vm.createContext({});
  const hook = new vm.Script(
    `(function (text) { const p = JSON.parse(text); const r = (function (p) { ${HOOK_BODY} })(p); return JSON.stringify(r); })`,
  ).runInContext(context);
  const samples = [];
  const payloadText = JSON.stringify(smallPayload);
  for (let i = 0; i < 20000; i++) {
    const started = performance.now();
    JSON.parse(hook(payloadText));
    if (i >= 5000) samples.push(performance.now() - started);
  }
  return percentile(samples, 50);
}

async function quickjsEcho() {
  const { getQuickJS } = await import("quickjs-emscripten");
  const QuickJS = await getQuickJS();
  const context = QuickJS.newContext();
  const fn = context.unwrapResult(
    context.evalCode(`(function (text) { const p = JSON.parse(text); return JSON.stringify({ result: p.result }); })`),
  );
  const samples = [];
  for (let i = 0; i < 130; i++) {
    const started = performance.now();
    const arg = context.newString(JSON.stringify(echoPayload));
    const out = context.unwrapResult(context.callFunction(fn, context.undefined, arg));
    JSON.parse(context.getString(out));
    out.dispose();
    arg.dispose();
    if (i >= 30) samples.push(performance.now() - started);
  }
  fn.dispose();
  context.dispose();
  return percentile(samples, 50);
}

// --- cold start and idle tenants ---------------------------------------------------------------
async function coldStart() {
  const pool = createSandboxPool({ workers: 2, prewarm: true });
  const warm = pool.tenant("warm");
  await warm.load([policy]); // bundle now cached; workers booted
  const samples = [];
  for (let i = 0; i < 60; i++) {
    const tenant = pool.tenant(`cold-${i}`);
    const manifests = await tenant.load([policy]);
    const run = await tenant.openRun({ runId: "first", scripts: manifests });
    const started = performance.now();
    await run.callHook("policy", "beforeToolCall", smallPayload);
    samples.push(performance.now() - started);
    await run.close();
  }
  await pool.close();
  return percentile(samples, 50);
}

function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024;
}

async function rssPerTenant(count = 1000) {
  const pool = createSandboxPool({ workers: 2, prewarm: true });
  const idle = script("idle", `export default { hooks: { beforeToolCall(p) { ${HOOK_BODY} } } };`);
  await pool.tenant("first").load([idle]);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const total = () => rssOf(process.pid) + pool.workers().reduce((sum, worker) => sum + rssOf(worker.pid), 0);
  const before = total();
  const names = Array.from({ length: count }, (_, i) => `idle-${i}`);
  for (let i = 0; i < names.length; i += 32) {
    await Promise.all(names.slice(i, i + 32).map((name) => pool.tenant(name).load([idle]).catch(countFailure)));
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
  const after = total();
  // The blast radius at the default cap: how many tenants the fullest shared worker holds, and over how many workers.
  const { tenantsPerWorker } = pool.stats();
  await pool.close();
  return {
    mb: (after - before) / count / 1048576,
    maxTenants: Math.max(...tenantsPerWorker.map((worker) => worker.tenants)),
    workers: tenantsPerWorker.length,
  };
}

// --- under attack ----------------------------------------------------------------------------------
async function underAttack(seconds = 6) {
  const pool = createSandboxPool({ workers: 2, prewarm: true, workerRssBudgetMb: 512 });
  const victim = pool.tenant("victim");
  const victimRun = await victim.openRun({ runId: "v", scripts: await victim.load([policy]) });
  const attacker = pool.tenant("attacker", { cpuMs: 100, wallMs: 1000, memoryMb: 32 });
  const attackScript = script(
    "attack",
    `export default { hooks: { beforeToolCall(p) {
      if (p.attempt % 2 === 0) { const keep = []; for (;;) keep.push(new Array(1e6).fill(1.5)); }
      for (;;) {}
    } } };`,
  );
  const attackRun = await attacker.openRun({ runId: "a", scripts: await attacker.load([attackScript]) });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const deadline = performance.now() + seconds * 1000;
  let attacks = 0;
  const codes = {};
  const attackers = Array.from({ length: 4 }, async () => {
    while (performance.now() < deadline) {
      attacks++;
      await attackRun.callHook("attack", "beforeToolCall", { ...smallPayload, attempt: attacks }).then(
        () => {},
        (error) => (codes[error.code] = (codes[error.code] ?? 0) + 1),
      );
    }
  });
  delay.enable();
  const victimSamples = [];
  while (performance.now() < deadline) {
    const started = performance.now();
    await victimRun.callHook("policy", "beforeToolCall", smallPayload);
    victimSamples.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  delay.disable();
  await Promise.all(attackers);
  log(`attack outcomes: ${JSON.stringify(codes)}, victim calls: ${victimSamples.length}`);
  await pool.close();
  return { eventLoopP99: delay.percentile(99) / 1e6, victimP99: percentile(victimSamples, 99) };
}

/** Issue 5's figures (http_runs_per_s, http_run_p99_ms, store_commit_us_p50, ...) come from their own script. */
function serverFigures() {
  const out = spawnSync(process.execPath, [join(root, "scripts/bench-server.mjs"), "--json"], { encoding: "utf8", maxBuffer: 1 << 20 });
  if (out.status !== 0) throw new Error(`bench-server failed: ${out.stderr.slice(-500)}`);
  return JSON.parse(out.stdout.trim().split("\n").at(-1));
}

// --- run ---------------------------------------------------------------------------------------------
const started = performance.now();
log("bare isolated-vm baseline...");
const bareMs = bareIvmAsyncApply();
log("node:vm baseline...");
const nodeVmMs = nodeVmCall();
log("sandbox latency, echo, loop...");
const latency = await sandboxLatency();
log("quickjs echo...");
const quickjsMs = await quickjsEcho();
log("cold start...");
const coldMs = await coldStart();
log("1000 idle tenants...");
const perTenant = await rssPerTenant();
log("under attack...");
const attack = await underAttack();
log("tenants apart (scripts/bench/tenancy.mjs)...");
const { measureTenancy } = await import("./bench/tenancy.mjs");
const tenancy = await measureTenancy({ dist: join(root, "dist") });
log("replay of recorded calls...");
const replayPerSecond = await replayThroughput();
log("hookbox test on 1,000 cases (scripts/bench/policy-cases.mjs)...");
const { measurePolicyCasesPerSecond } = await import("./bench/policy-cases.mjs");
const policyCases = measurePolicyCasesPerSecond({ root });
log(`policy cases: ${policyCases.cases} in ${round(policyCases.seconds, 2)} s`);
log("HTTP server and store (scripts/bench-server.mjs)...");
const server = serverFigures();
log("serve start-up with 1,000 and 10,000 tenants (scripts/bench/serve-startup.mjs)...");
const { measureServeStartup } = await import("./bench/serve-startup.mjs");
const startup = await measureServeStartup();
log("1, 2 and 3 servers on one PostgreSQL, and takeover after kill -9 (scripts/bench/cluster.mjs)...");
const { measureCluster } = await import("./bench/cluster.mjs");
const cluster = await measureCluster();

const results = {
  hook_roundtrip_us_p50: round(percentile(latency.hook, 50) * 1000, 1),
  hook_roundtrip_us_p99: round(percentile(latency.hook, 99) * 1000, 1),
  bare_ivm_async_apply_us_p50: round(bareMs * 1000, 1),
  node_vm_call_us_p50: round(nodeVmMs * 1000, 2),
  echo_100kb_ms_p50: round(percentile(latency.echo, 50), 3),
  quickjs_echo_100kb_ms_p50: round(quickjsMs, 3),
  cold_start_ms_p50: round(coldMs, 3),
  rss_per_tenant_mb: round(perTenant.mb, 3),
  tenants_per_worker_max: perTenant.maxTenants,
  workers_for_1000_tenants: perTenant.workers,
  loop_tool_calls_per_s: Math.round(latency.throughput),
  event_loop_delay_p99_ms_under_attack: round(attack.eventLoopP99, 2),
  victim_hook_p99_ms_under_attack: round(attack.victimP99, 2),
  ...tenancy,
  node_version: process.version,
  // The second wall the bench's workers ran in: "bubblewrap", or "none" (off or unavailable).
  sandbox_wall: latency.wall,
  mass_tenant_failures: massFailures.count,
  replay_calls_per_s: Math.round(replayPerSecond),
  policy_cases_per_s: Math.round(policyCases.casesPerSecond),
  ...server,
  ...startup,
  ...cluster,
};
log(`done in ${round((performance.now() - started) / 1000, 1)} s`);

if (json) {
  process.stdout.write(`${JSON.stringify(results)}\n`);
} else {
  const goals = {
    hook_roundtrip_us_p50: `<= 0.5 x bare_ivm_async_apply_us_p50 (${round(results.bare_ivm_async_apply_us_p50 / 2, 1)})`,
    echo_100kb_ms_p50: `<= quickjs / 3 (${round(results.quickjs_echo_100kb_ms_p50 / 3, 3)})`,
    cold_start_ms_p50: "<= 3",
    rss_per_tenant_mb: "<= 2.5 (at maxTenantsPerWorker 64)",
    tenants_per_worker_max: "<= 64",
    event_loop_delay_p99_ms_under_attack: "<= 5",
    victim_hook_p99_ms_under_attack: "<= 5",
    rss_10k_tenants_mb: "<= 3000",
    cold_start_after_evict_ms_p50: "<= 3",
    loop_tool_calls_per_s: ">= 10000",
    http_runs_per_s: `>= 500, and >= 0.8 x in memory (${round(results.http_runs_per_s_in_memory * 0.8, 1)})`,
    http_cpu_ms_per_run: "<= 1.5",
    session_cpu_ratio_1000: "<= 1.3",
    session_store_growth_ratio_1000: "<= 1.3",
    iteration_ms_ratio_1000: "<= 1.3",
    replay_calls_per_s: ">= 1000 (10,000 calls in < 10 s)",
    serve_healthz_ms_10000_tenants: "<= 5000",
    serve_tenant_first_run_ms_10000_tenants: `<= 2 x warm (${round(results.serve_warm_run_ms_10000_tenants * 2)})`,
    policy_cases_per_s: ">= 200 (1,000 cases in < 5 s, the CLI end to end)",
    cluster_runs_per_s: `3 servers on one PostgreSQL (no goal; one server on SQLite: ${results.http_runs_per_s})`,
    cluster_takeover_ms: `<= lease + 5000 (${results.cluster_lease_ms + 5000})`,
  };
  console.log(
    `hookbox bench — ${cpus().length} x ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GB, Node ${process.version}`,
  );
  for (const [key, value] of Object.entries(results)) console.log(`${key.padEnd(40)} ${String(value).padStart(10)}   ${goals[key] ?? ""}`);
}
process.exit(0);
