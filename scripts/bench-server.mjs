// Server and store figures (issues 5 and 26). Prints one JSON object on stdout with --json, a table otherwise.
//   http_runs_per_s, http_run_p99_ms: 50 concurrent clients over loopback HTTP + SSE against a real
//     `hookbox serve` (SQLite store file), each client: create a session, start a two-tool scripted run whose
//     tools pass sandboxed beforeToolCall + afterToolCall hooks, read the SSE stream to run-finished.
//   http_cpu_ms_per_run / http_worker_cpu_ms_per_run: serve's CPU per run / its sandbox workers' (procfs), over the
//     timed part, after 10 + 4,000 untimed runs (http-workload.mjs WARM_UP_RUNS: the steady state, V8 done optimizing).
//     The timed part is 3,000 runs (60 a client): about one cycle of V8's major GC (serve's old space fills in ~3,000
//     runs) and five WAL checkpoints, so the figure is their average; a window of 200 runs read 0.1-0.3 ms low or
//     high by whether one of them fell in it.
//   http_client_cpu_ms_per_run: the 50 clients' own CPU per run (this process), on the same cores as serve.
//   *_in_memory: the same workload with `--store :memory:` (SQLite without a file: no WAL, no fsync).
//   session_cpu_ratio_1000, session_store_growth_ratio_1000: scripts/bench/long-session.mjs (one session, 1010 runs).
//   iteration_ms_ratio_1000: scripts/bench/long-run.mjs (one run of 1000 iterations).
//   store_commit_us_p50: one phase snapshot (two new blocks on a stored turn) to the SQLite file store, as a run's
//   writer sends it; store_commit_us_p50_in_memory: the same with the in-process MemoryStore;
//   store_event_append_us_p50: one event.
// Run after `npm run build`: node scripts/bench-server.mjs [--json] [--clients N] [--runs-per-client N] [--no-long]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { httpWorkload, percentile, round, writeTenant } from "./bench/http-workload.mjs";
import { measureLongSession } from "./bench/long-session.mjs";
import { measureLongRun } from "./bench/long-run.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    json: { type: "boolean" },
    clients: { type: "string" },
    "runs-per-client": { type: "string" },
    "no-long": { type: "boolean" },
  },
});
const clients = Number(values.clients ?? 50);
const runsPerClient = Number(values["runs-per-client"] ?? 60);
const work = mkdtempSync(join(tmpdir(), "hookbox-bench-server-"));
const log = (line) => process.stderr.write(`${line}\n`);

async function storeCommits() {
  // Bundled under node_modules/.cache so its packages resolve from the repo.
  const entry = join(root, "node_modules", ".cache", "hookbox-bench", "store.mjs");
  await build({
    entryPoints: [join(root, "src/store/index.ts")],
    outfile: entry,
    bundle: true,
    platform: "node",
    format: "esm",
    packages: "external",
    logLevel: "warning",
  });
  const { openStore, openMemoryStore } = await import(pathToFileURL(entry).href);
  const block = (i) =>
    JSON.stringify({
      id: `b${i}`,
      kind: i % 2 ? "tool_call" : "tool_use",
      payload: { text: "x".repeat(120), id: `c${i}`, args: { id: "A17", amount: 42 } },
      metadata: {},
    });
  const headJson = JSON.stringify({ blocks: [], id: "turn-1", metadata: { "hookbox.session_id@v1": "s" }, data: {} });
  const measure = async (store) => {
    await store.createSession({ id: "s", tenant: "bench", tenantConfig: {}, defaults: {}, createdMs: Date.now() });
    await store.createRun({
      id: "r",
      sessionId: "s",
      inferenceId: "i",
      prompt: "p",
      options: {},
      status: "running",
      iterations: 0,
      startedMs: Date.now(),
      lastSeq: 0,
      ownerPid: process.pid,
    });
    const commit = [];
    const append = [];
    let segments = [];
    for (let i = 0; i < 3000; i++) {
      const event = {
        type: "tool-started",
        seq: i + 1,
        timestampMs: Date.now(),
        sessionId: "s",
        inferenceId: "i",
        callId: "c1",
        name: "lookup",
        args: { id: "A17" },
        attempt: 1,
        origin: "host",
      };
      let t = process.hrtime.bigint();
      await store.write({ runId: "r", sessionId: "s", tenant: "bench", events: [{ event, json: JSON.stringify(event) }] });
      append.push(Number(process.hrtime.bigint() - t) / 1000);
      // A phase: the turn so far (positions) plus two new blocks, as the run's writer sends it.
      t = process.hrtime.bigint();
      const written = await store.write({
        runId: "r",
        sessionId: "s",
        tenant: "bench",
        snapshot: {
          phase: "post_tools",
          index: i + 1,
          pieces: [...segments.map((segment) => ({ segment })), { append: [block(2 * i), block(2 * i + 1)] }],
          ...(i === 0 ? { headJson } : {}),
          blockBytes: 0,
          lastSeq: i + 1,
          iterations: 0,
          createdMs: Date.now(),
        },
      });
      commit.push(Number(process.hrtime.bigint() - t) / 1000);
      segments = written.snapshot.segments;
    }
    await store.close();
    commit.sort((a, b) => a - b);
    append.sort((a, b) => a - b);
    return { commitP50: percentile(commit.slice(500), 50), appendP50: percentile(append.slice(500), 50) };
  };
  const sqlite = await measure(openStore(join(work, "commit.db")));
  const memory = await measure(openMemoryStore());
  return { sqlite, memory };
}

try {
  writeTenant(work);
  const commits = await storeCommits();
  log("HTTP workload, SQLite file store...");
  const file = await httpWorkload(work, join(work, "bench.db"), { clients, runsPerClient });
  log("HTTP workload, in memory...");
  const memory = await httpWorkload(work, ":memory:", { clients, runsPerClient });
  const result = {
    http_runs_per_s: round(file.runsPerS),
    http_run_p50_ms: round(file.p50),
    http_run_p99_ms: round(file.p99),
    http_cpu_ms_per_run: round(file.cpuMsPerRun, 2),
    http_worker_cpu_ms_per_run: round(file.workerCpuMsPerRun, 2),
    http_client_cpu_ms_per_run: round(file.clientCpuMsPerRun, 2),
    http_runs_per_s_in_memory: round(memory.runsPerS),
    http_run_p99_ms_in_memory: round(memory.p99),
    http_cpu_ms_per_run_in_memory: round(memory.cpuMsPerRun, 2),
    store_commit_us_p50: round(commits.sqlite.commitP50),
    store_commit_us_p50_in_memory: round(commits.memory.commitP50),
    store_event_append_us_p50: round(commits.sqlite.appendP50),
  };
  if (!values["no-long"]) {
    log("one session of 1010 runs...");
    const session = await measureLongSession({ dir: mkdtempSync(join(work, "session-")) });
    log("one run of 1000 iterations...");
    const run = await measureLongRun({ dist: join(root, "dist"), dir: mkdtempSync(join(work, "run-")) });
    Object.assign(result, {
      session_cpu_ratio_1000: round(session.cpuRatio, 2),
      session_store_growth_ratio_1000: round(session.growthRatio, 2),
      session_cpu_ms_per_run_10: round(session.cpuMsAt10, 2),
      session_cpu_ms_per_run_1000: round(session.cpuMsAt1000, 2),
      session_store_bytes_per_run_1000: Math.round(session.bytesAt1000),
      iteration_ms_ratio_1000: round(run.ratio, 2),
      iteration_ms_10: round(run.msAt10, 3),
      iteration_ms_1000: round(run.msAt1000, 3),
    });
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } else {
    process.stdout.write(
      `HTTP: ${clients} clients x ${runsPerClient} runs (two tools, sandboxed before+after hooks, SSE to run-finished)\n`,
    );
    for (const [key, value] of Object.entries(result)) process.stdout.write(`  ${key.padEnd(34)} ${value}\n`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
