// Tenants apart (docs/sandbox.md "Tenants apart"): memory with 10,000 tenants under the default eviction, the cold start
// after an eviction, and the memory cost of a process-per-tenant tenant. Used by scripts/bench.mjs; runs alone too:
// `node scripts/bench/tenancy.mjs [--tenants N]` (after `npm run build`) prints its figures as one JSON object.
import { readFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { HOOK_BODY, countFailure, massFailures, percentile, smallPayload } from "./fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const log = (...parts) => process.stderr.write(`${parts.join(" ")}\n`);

function tenantScript() {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-tenancy-"));
  const path = join(dir, "policy.ts");
  writeFileSync(path, `export default { hooks: { beforeToolCall(p) { ${HOOK_BODY} } } };`);
  return { path };
}

export function rssOf(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;
  } catch {
    return 0; // exited meanwhile
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One tenant's life in these benches: load its script, open a run, make one hook call, close the run. */
async function oneCall(pool, name, source, options) {
  const sandbox = pool.tenant(name, undefined, options);
  const run = await sandbox.openRun({ runId: `run-${name}`, scripts: await sandbox.load([source]) });
  await run.callHook("policy", "beforeToolCall", smallPayload);
  return run;
}

/**
 * rss_10k_tenants_mb: a pool with the default eviction (idleMs 300000, maxLiveIsolates 2000), 10,000 tenants
 * each load the script and make one hook call (32 at a time), then the host's and all workers' RSS.
 */
async function rss10kTenants(createSandboxPool, source, count) {
  const pool = createSandboxPool({ workers: 2, prewarm: true });
  const started = performance.now();
  const names = Array.from({ length: count }, (_, i) => `tenant-${i}`);
  for (let i = 0; i < names.length; i += 32) {
    await Promise.all(names.slice(i, i + 32).map((name) => oneCall(pool, name, source).then((run) => run.close(), countFailure)));
  }
  await pause(300);
  const stats = pool.stats();
  const workers = pool
    .workers()
    .map((w) => ({ pid: w.pid, retiring: w.retiring, tenants: w.tenants.length, mb: Math.round(rssOf(w.pid) / 1048576) }));
  log(`workers then: ${JSON.stringify(workers)}, host ${Math.round(rssOf(process.pid) / 1048576)} MB`);
  const rss = rssOf(process.pid) + pool.workers().reduce((sum, worker) => sum + rssOf(worker.pid), 0);
  log(
    `${count} tenants in ${Math.round(performance.now() - started)} ms: ${stats.liveIsolates} live isolates, ${stats.evictions} evicted, RSS ${Math.round(rss / 1048576)} MB`,
  );
  await pool.close();
  return { mb: rss / 1048576, liveIsolates: stats.liveIsolates };
}

/**
 * cold_start_after_evict_ms_p50: 60 tenants each made a call and keep their run open; after idleMs every isolate
 * is evicted; then each tenant's next hook call (the isolate, the runtime and the bundle from the worker's code
 * cache, the run's context) is timed, one after another.
 */
async function coldStartAfterEvict(createSandboxPool, source) {
  const pool = createSandboxPool({ workers: 2, prewarm: true, idleMs: 1000 });
  const runs = [];
  for (let i = 0; i < 60; i++) runs.push(await oneCall(pool, `evicted-${i}`, source));
  const deadline = performance.now() + 10_000;
  while (pool.stats().liveIsolates > 0 && performance.now() < deadline) await pause(50);
  if (pool.stats().liveIsolates > 0) throw new Error("isolates were not evicted");
  const samples = [];
  for (const run of runs) {
    const started = performance.now();
    await run.callHook("policy", "beforeToolCall", smallPayload);
    samples.push(performance.now() - started);
  }
  await pool.close();
  return percentile(samples, 50);
}

/** rss_per_tenant_process_mb: 8 process-per-tenant tenants each made one call; the mean RSS of their workers. */
async function rssPerTenantProcess(createSandboxPool, source, count = 8) {
  const pool = createSandboxPool({ workers: 2 });
  for (let i = 0; i < count; i++) await oneCall(pool, `own-${i}`, source, { isolation: "process-per-tenant" });
  await pause(300);
  const own = pool.workers().filter((worker) => worker.isolation === "process-per-tenant");
  if (own.length !== count) throw new Error(`expected ${count} process-per-tenant workers, found ${own.length}`);
  const mean = own.reduce((sum, worker) => sum + rssOf(worker.pid), 0) / count / 1048576;
  await pool.close();
  return mean;
}

export async function measureTenancy({ dist, tenants = 10_000 }) {
  const { createSandboxPool } = await import(pathToFileURL(join(dist, "index.js")).href);
  const source = tenantScript();
  log("cold start after eviction...");
  const coldMs = await coldStartAfterEvict(createSandboxPool, source);
  log("process-per-tenant RSS...");
  const perProcessMb = await rssPerTenantProcess(createSandboxPool, source);
  log(`${tenants} tenants, one call each...`);
  const tenK = await rss10kTenants(createSandboxPool, source, tenants);
  return {
    rss_10k_tenants_mb: Math.round(tenK.mb),
    live_isolates_after_10k_tenants: tenK.liveIsolates,
    cold_start_after_evict_ms_p50: Math.round(coldMs * 1000) / 1000,
    rss_per_tenant_process_mb: Math.round(perProcessMb * 10) / 10,
    ...(import.meta.url === pathToFileURL(process.argv[1]).href ? { mass_tenant_failures: massFailures.count } : {}),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const at = process.argv.indexOf("--tenants");
  const tenants = at === -1 ? 10_000 : Number(process.argv[at + 1]);
  process.stdout.write(`${JSON.stringify(await measureTenancy({ dist: join(root, "dist"), tenants }))}\n`);
  process.exit(0);
}
