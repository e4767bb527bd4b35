// Many `hookbox serve` processes on one PostgreSQL database (docs/scale-out.md), on a throwaway PostgreSQL cluster
// (scripts/postgres-server.mjs; HOOKBOX_TEST_PG_URL names an existing server instead):
//   cluster_runs_per_s_1, _2, _3 (and _p99_ms): the HTTP workload of scripts/bench-server.mjs (a two-tool scripted
//     run with sandboxed before and after hooks, read over SSE to run-finished) through 1, 2 and 3 servers on one
//     fresh database; the clients are spread round-robin over the servers, each sending all its requests to one.
//     cluster_runs_per_s is the 3-server figure (beside the single-server SQLite http_runs_per_s).
//   cluster_takeover_ms: two servers, a run started on A pauses (step mode); A is killed with SIGKILL; the time
//     until B, reading the run's stream and continuing its pauses, sees its run-finished (the lease running out,
//     B's scan finding it, the resume, the rest of the run). The median of a few takeovers, with a lease of
//     cluster_lease_ms (the contract: within the lease plus a few seconds).
// Used by scripts/bench.mjs; runs alone too (after `npm run build`):
//   node scripts/bench/cluster.mjs [--clients N] [--runs-per-client N] [--takeovers N] prints one JSON object.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startPgServer } from "../postgres-server.mjs";
import { readSseMessages } from "../sse-messages.mjs";
import { newSession, percentile, round, startServe, timedRuns, warmUp, writeTenant } from "./http-workload.mjs";

const LEASE_MS = 2000;
const headers = { authorization: "Bearer bench-key", "content-type": "application/json" };
const log = (line) => process.stderr.write(`${line}\n`);

/** `nodes` servers on one new database, the runs of `clients` clients spread over them. */
async function throughput(pg, nodes, { clients, runsPerClient }) {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-cluster-"));
  const store = await pg.createDatabase("hookbox_bench");
  writeTenant(dir, { config: { store, server: { leaseMs: 15_000 } } });
  const servers = [];
  try {
    // One after the other: the first migrates the database.
    for (let i = 0; i < nodes; i++) servers.push(await startServe(dir, store));
    const urls = servers.map((server) => server.url);
    await warmUp(urls, clients);
    return await timedRuns(urls, { clients, runsPerClient });
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Reads a run's SSE stream from `url` to its end, calling `onEvent` for each event. */
async function followRun(url, runId, onEvent) {
  const response = await fetch(`${url}/v1/runs/${runId}/events`, { headers });
  if (response.status !== 200) throw new Error(`stream of ${runId}: ${response.status} ${await response.text()}`);
  await readSseMessages(response.body, ({ data }) => onEvent(JSON.parse(data)));
}

/** One takeover: a paused run's owner killed with SIGKILL, the run finished by the other server; ms. */
async function oneTakeover(dir, store, survivor) {
  const owner = await startServe(dir, store);
  try {
    const sessionId = await newSession(owner.url);
    const started = await fetch(`${owner.url}/v1/sessions/${sessionId}/runs`, {
      method: "POST",
      headers,
      body: JSON.stringify({ prompt: "Refund A17", step: true }),
    });
    if (started.status !== 202) throw new Error(`run start: ${started.status} ${await started.text()}`);
    const { runId } = await started.json();
    let killedAt = 0;
    let finished;
    await followRun(survivor.url, runId, (event) => {
      if (event.type === "debugger.pause" && killedAt === 0) {
        process.kill(owner.pid, "SIGKILL");
        killedAt = performance.now();
      } else if (event.type === "debugger.pause") {
        void fetch(`${survivor.url}/v1/runs/${runId}/continue`, {
          method: "POST",
          headers,
          body: JSON.stringify({ pauseId: event.pauseId }),
        });
      } else if (event.type === "run-finished") {
        finished = { at: performance.now(), status: event.status };
      }
    });
    if (!killedAt || finished?.status !== "completed")
      throw new Error(`run ${runId} was not taken over to completion: ${JSON.stringify(finished)}`);
    return finished.at - killedAt;
  } finally {
    try {
      process.kill(owner.pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
}

async function takeovers(pg, count) {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-takeover-"));
  const store = await pg.createDatabase("hookbox_bench");
  writeTenant(dir, { config: { store, server: { leaseMs: LEASE_MS } } });
  const survivor = await startServe(dir, store);
  try {
    const samples = [];
    for (let i = 0; i < count; i++) samples.push(await oneTakeover(dir, store, survivor));
    return samples.sort((a, b) => a - b);
  } finally {
    await survivor.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every cluster figure, on a PostgreSQL server of its own. */
export async function measureCluster({ clients = 48, runsPerClient = 4, takeoverCount = 3 } = {}) {
  const pg = await startPgServer();
  try {
    const result = {};
    for (const nodes of [1, 2, 3]) {
      log(`cluster: ${nodes} server(s) on one PostgreSQL database...`);
      const measured = await throughput(pg, nodes, { clients, runsPerClient });
      result[`cluster_runs_per_s_${nodes}`] = round(measured.runsPerS);
      result[`cluster_run_p99_ms_${nodes}`] = round(measured.p99);
    }
    result.cluster_runs_per_s = result.cluster_runs_per_s_3;
    log(`cluster: ${takeoverCount} takeovers after kill -9 (lease ${LEASE_MS} ms)...`);
    const samples = await takeovers(pg, takeoverCount);
    result.cluster_takeover_ms = round(percentile(samples, 50));
    result.cluster_takeover_ms_max = round(samples.at(-1));
    result.cluster_lease_ms = LEASE_MS;
    return result;
  } finally {
    await pg.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { clients: { type: "string" }, "runs-per-client": { type: "string" }, takeovers: { type: "string" } },
  });
  const result = await measureCluster({
    clients: Number(values.clients ?? 48),
    runsPerClient: Number(values["runs-per-client"] ?? 4),
    takeoverCount: Number(values.takeovers ?? 3),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
