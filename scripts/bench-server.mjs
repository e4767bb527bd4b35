// Server and store figures (issue 5). Prints one JSON object on stdout with --json, a table otherwise.
//   http_runs_per_s, http_run_p99_ms: 50 concurrent clients over loopback HTTP + SSE against a real
//     `hookbox serve` (SQLite store file), each client: create a session, start a two-tool scripted run whose
//     tools pass sandboxed beforeToolCall + afterToolCall hooks, read the SSE stream to run-finished.
//   *_in_memory: the same workload with `--store :memory:` (SQLite without a file: no WAL, no fsync).
//   store_commit_us_p50: committing one snapshot (a 12-block turn) to the SQLite file store;
//   store_commit_us_p50_in_memory: the same with the in-process MemoryStore; store_event_append_us_p50: one event.
// Run after `npm run build`: node scripts/bench-server.mjs [--json] [--clients N] [--runs-per-client N]
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: { json: { type: "boolean" }, clients: { type: "string" }, "runs-per-client": { type: "string" } },
});
const clients = Number(values.clients ?? 50);
const runsPerClient = Number(values["runs-per-client"] ?? 4);
const work = mkdtempSync(join(tmpdir(), "hookbox-bench-server-"));

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const round = (n, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

function writeTenant() {
  writeFileSync(
    join(work, "tools.mjs"),
    `export default [
  { name: "lookup", description: "look up", parameters: { type: "object", properties: { id: { type: "string" } } }, handler: (args) => ({ id: args.id, total: 120 }) },
  { name: "refund", description: "refund", parameters: { type: "object", properties: { id: { type: "string" } } }, handler: (args) => ({ refunded: args.id }) },
];\n`,
  );
  writeFileSync(
    join(work, "policy.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: {
  beforeToolCall(p) { if (p.call.name === "refund" && p.call.args.amount > 100) return { action: "deny", reason: "over limit" }; },
  afterToolCall(p) { return { result: p.result }; },
} });\n`,
  );
  writeFileSync(
    join(work, "model.json"),
    JSON.stringify({
      steps: [
        { toolCalls: [{ id: "c1", name: "lookup", args: { id: "A17" } }] },
        { toolCalls: [{ id: "c2", name: "refund", args: { id: "A17" } }] },
        { text: "Refund issued." },
      ],
    }),
  );
  writeFileSync(
    join(work, "config.json"),
    JSON.stringify({
      tenants: [
        {
          name: "bench",
          apiKeys: [{ sha256: createHash("sha256").update("bench-key").digest("hex") }],
          scripts: ["policy.ts"],
          hostTools: "tools.mjs",
          model: "scripted:model.json",
          limits: { runsPerMinute: 1_000_000, requestsPerMinute: 10_000_000, maxEventStreams: 1000 },
        },
      ],
    }),
  );
}

async function startServe(store) {
  const child = spawn(
    process.execPath,
    [join(root, "bin/hookbox.js"), "serve", "--port", "0", "--store", store, "--config", join(work, "config.json")],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const match = /listening on (\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.kill("SIGTERM");
      }),
  };
}

const headers = { authorization: "Bearer bench-key", "content-type": "application/json" };

async function oneRun(url) {
  const started = performance.now();
  const session = await (await fetch(`${url}/v1/sessions`, { method: "POST", headers, body: "{}" })).json();
  const run = await fetch(`${url}/v1/sessions/${session.sessionId}/runs`, {
    method: "POST",
    headers,
    body: JSON.stringify({ prompt: "Refund A17" }),
  });
  if (run.status !== 202) throw new Error(`run start: ${run.status} ${await run.text()}`);
  const { runId } = await run.json();
  const stream = await fetch(`${url}/v1/runs/${runId}/events`, { headers });
  const text = await stream.text(); // the stream ends after run-finished
  if (!text.includes('"run-finished"') || !text.includes('"completed"'))
    throw new Error(`run ${runId} did not complete: ${text.slice(-300)}`);
  return performance.now() - started;
}

async function httpWorkload(store) {
  const server = await startServe(store);
  try {
    await Promise.all(Array.from({ length: Math.min(clients, 10) }, () => oneRun(server.url))); // warm-up: bundle cache, JIT
    const latencies = [];
    const begin = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (let i = 0; i < runsPerClient; i++) latencies.push(await oneRun(server.url));
      }),
    );
    const elapsedS = (performance.now() - begin) / 1000;
    latencies.sort((a, b) => a - b);
    return {
      runsPerS: latencies.length / elapsedS,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      runs: latencies.length,
    };
  } finally {
    await server.stop();
  }
}

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
  const turn = {
    id: "turn-1",
    blocks: Array.from({ length: 12 }, (_, i) => ({
      id: `b${i}`,
      kind: i % 3 === 0 ? "user" : i % 3 === 1 ? "tool_call" : "tool_use",
      payload: { text: "x".repeat(120), id: `c${i}`, args: { id: "A17", amount: 42 } },
      metadata: {},
    })),
    metadata: { "hookbox.session_id@v1": "s" },
    data: {},
  };
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
    for (let i = 0; i < 3000; i++) {
      let t = process.hrtime.bigint();
      await store.appendEvent("r", {
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
      });
      append.push(Number(process.hrtime.bigint() - t) / 1000);
      t = process.hrtime.bigint();
      await store.saveSnapshot("r", "post_tools", turn);
      commit.push(Number(process.hrtime.bigint() - t) / 1000);
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
  writeTenant();
  const commits = await storeCommits();
  const file = await httpWorkload(join(work, "bench.db"));
  const memory = await httpWorkload(":memory:");
  const result = {
    http_runs_per_s: round(file.runsPerS),
    http_run_p50_ms: round(file.p50),
    http_run_p99_ms: round(file.p99),
    http_runs_per_s_in_memory: round(memory.runsPerS),
    http_run_p99_ms_in_memory: round(memory.p99),
    store_commit_us_p50: round(commits.sqlite.commitP50),
    store_commit_us_p50_in_memory: round(commits.memory.commitP50),
    store_event_append_us_p50: round(commits.sqlite.appendP50),
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } else {
    process.stdout.write(
      `HTTP: ${clients} clients x ${runsPerClient} runs (two tools, sandboxed before+after hooks, SSE to run-finished)\n`,
    );
    for (const [key, value] of Object.entries(result)) process.stdout.write(`  ${key.padEnd(32)} ${value}\n`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
