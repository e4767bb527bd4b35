// Start-up of `hookbox serve` with many tenants (docs/server.md, "Start-up"): the time from spawning the process to
// its first /healthz answer, at 1,000 and 10,000 tenants (every tenant its own key, one script and one scripted
// model file shared); then, at 10,000, the first run of the config's last tenant (its runtime built on that request,
// ahead of the background queue, in a process that never ran anything), the best of two more runs of it (warm), and
// a tenant's first run in a warm process (its build on demand and its first run): the median of the first runs of the
// FIRST_RUNS tenants before it in the config, one after another, each a tenant no request used before (one such run
// is one sample of a figure that moves with what the background builds do meanwhile; all are printed to stderr).
// A run here: POST a session, POST a run, read its SSE stream to the end. At each count, once /healthz answers, the median of 20 scrapes of GET /metrics
// (one hookbox_store_bytes series per tenant, read from the store's per-tenant counters): its cost per tenant at the
// larger count over the smaller is metrics_scrape_per_tenant_ratio. Used by scripts/bench.mjs; runs alone too:
// `node scripts/bench/serve-startup.mjs [--tenants N,M]` (after `npm run build`) prints one JSON object.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { writeStartupTenantFiles } from "./fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const log = (...parts) => process.stderr.write(`${parts.join(" ")}\n`);
const round = (value) => Math.round(value * 10) / 10;
const keyOf = (i) => `bench-key-${i}`;
const ADMIN_KEY = "bench-admin-key";
const SCRAPES = 20;
const FIRST_RUNS = 5;

function writeConfig(count) {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-startup-"));
  writeStartupTenantFiles(dir);
  const tenants = Array.from({ length: count }, (_, i) => ({
    name: `t${i}`,
    apiKeys: [{ sha256: createHash("sha256").update(keyOf(i)).digest("hex") }],
    scripts: ["policy.ts"],
    model: "scripted:model.json",
    limits: { runsPerMinute: 100_000 },
  }));
  const server = { adminKeys: [{ sha256: createHash("sha256").update(ADMIN_KEY).digest("hex") }] };
  writeFileSync(join(dir, "config.json"), JSON.stringify({ server, tenants }));
  return dir;
}

/** The median time of SCRAPES scrapes of GET /metrics, one after another; ms. */
async function scrapeMetrics(url, count) {
  const samples = [];
  for (let i = 0; i < SCRAPES; i++) {
    const started = performance.now();
    const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    const text = await response.text();
    samples.push(performance.now() - started);
    const series = text.split("\n").filter((line) => line.startsWith("hookbox_store_bytes{")).length;
    if (response.status !== 200 || series !== count)
      throw new Error(`/metrics: ${response.status}, ${series} store series for ${count} tenants`);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

/** One run of the tenant `i` over HTTP, to its stream's end; ms. */
async function timedRun(url, i) {
  const started = performance.now();
  const headers = { authorization: `Bearer ${keyOf(i)}`, "content-type": "application/json" };
  const session = await (await fetch(`${url}/v1/sessions`, { method: "POST", headers, body: "{}" })).json();
  const response = await fetch(`${url}/v1/sessions/${session.sessionId}/runs`, {
    method: "POST",
    headers,
    body: JSON.stringify({ prompt: "go" }),
  });
  const run = await response.json();
  if (response.status !== 202) throw new Error(`run refused: ${JSON.stringify(run)}`);
  const events = await (await fetch(`${url}/v1/runs/${run.runId}/events`, { headers })).text();
  if (!events.includes('"status":"completed"')) throw new Error(`the run did not complete: ${events.slice(-300)}`);
  return performance.now() - started;
}

async function startUp(count, { runs = false } = {}) {
  const dir = writeConfig(count);
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [join(root, "bin/hookbox.js"), "serve", "--port", "0", "--store", join(dir, "store.db"), "--config", join(dir, "config.json")],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.on("exit", resolve));
  try {
    const url = await new Promise((resolve, reject) => {
      let stdout = "";
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
        const match = /listening on (http:\/\/\S+)/.exec(stdout);
        if (match) resolve(match[1]);
      });
      void exited.then((code) => reject(new Error(`serve exited (${code}) before listening: ${stderr.slice(-500)}`)));
    });
    let health;
    for (;;) {
      const response = await fetch(`${url}/healthz`).catch(() => undefined);
      if (response?.status === 200) {
        health = await response.json();
        break;
      }
    }
    const healthzMs = performance.now() - started;
    log(`${count} tenants: /healthz after ${Math.round(healthzMs)} ms (${health.tenants.ready} ready)`);
    const scrapeMs = await scrapeMetrics(url, count);
    log(`${count} tenants: GET /metrics ${round(scrapeMs)} ms (median of ${SCRAPES})`);
    if (!runs) return { healthzMs, scrapeMs };
    const firstRunMs = await timedRun(url, count - 1);
    const warmRunMs = Math.min(await timedRun(url, count - 1), await timedRun(url, count - 1));
    // Other tenants not built yet, in a process whose code paths are now warm: what one tenant's build adds.
    const tenantFirstRuns = [];
    for (let i = 2; i < 2 + FIRST_RUNS; i++) tenantFirstRuns.push(await timedRun(url, count - i));
    const tenantFirstRunMs = [...tenantFirstRuns].sort((a, b) => a - b)[Math.floor(FIRST_RUNS / 2)];
    log(
      `${count} tenants: the last tenant's first run ${Math.round(firstRunMs)} ms, warm ${Math.round(warmRunMs)} ms; ` +
        `the next ${FIRST_RUNS} tenants' first runs ${tenantFirstRuns.map((ms) => round(ms)).join(", ")} ms (median ${round(tenantFirstRunMs)})`,
    );
    return { healthzMs, scrapeMs, firstRunMs, warmRunMs, tenantFirstRunMs };
  } finally {
    child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function measureServeStartup({ counts = [1000, 10_000] } = {}) {
  const figures = {};
  const perTenantScrapeMs = [];
  for (const [index, count] of counts.entries()) {
    const last = index === counts.length - 1;
    const { healthzMs, scrapeMs, firstRunMs, warmRunMs, tenantFirstRunMs } = await startUp(count, { runs: last });
    figures[`serve_healthz_ms_${count}_tenants`] = round(healthzMs);
    figures[`metrics_scrape_ms_${count}_tenants`] = round(scrapeMs);
    perTenantScrapeMs.push(scrapeMs / count);
    if (last) {
      figures[`serve_first_run_ms_${count}_tenants`] = round(firstRunMs);
      figures[`serve_warm_run_ms_${count}_tenants`] = round(warmRunMs);
      figures[`serve_tenant_first_run_ms_${count}_tenants`] = round(tenantFirstRunMs);
    }
  }
  if (perTenantScrapeMs.length > 1)
    figures.metrics_scrape_per_tenant_ratio = Math.round((perTenantScrapeMs.at(-1) / perTenantScrapeMs[0]) * 100) / 100;
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const flag = process.argv.indexOf("--tenants");
  const counts = flag > 0 ? process.argv[flag + 1].split(",").map(Number) : undefined;
  process.stdout.write(`${JSON.stringify(await measureServeStartup(counts ? { counts } : {}))}\n`);
}
