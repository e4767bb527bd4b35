// The HTTP workload of scripts/bench-server.mjs, scripts/bench/long-session.mjs and profile-serve.mjs: a real
// `hookbox serve` child process, a tenant whose scripted runs call host tools that pass a sandboxed
// beforeToolCall and afterToolCall, and clients that start a run and read its SSE stream to run-finished.
import { spawn } from "node:child_process";
import http from "node:http";
import { writeFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import { treeCpuMs } from "./proc-cpu.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
export const round = (n, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * Three inferences and two tools (the bench's run), or with `steps` another shape (the long session's); `config`
 * adds top-level fields to the serve config (the cluster bench's `store` and `server.leaseMs`).
 */
export function writeTenant(dir, { steps, limits = {}, config = {} } = {}) {
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [
  { name: "lookup", description: "look up", parameters: { type: "object", properties: { id: { type: "string" } } }, handler: (args) => ({ id: args.id, total: 120 }) },
  { name: "refund", description: "refund", parameters: { type: "object", properties: { id: { type: "string" } } }, handler: (args) => ({ refunded: args.id }) },
];\n`,
  );
  writeFileSync(
    join(dir, "policy.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: {
  beforeToolCall(p) { if (p.call.name === "refund" && p.call.args.amount > 100) return { action: "deny", reason: "over limit" }; },
  afterToolCall(p) { return { result: p.result }; },
} });\n`,
  );
  writeFileSync(
    join(dir, "model.json"),
    JSON.stringify({
      steps: steps ?? [
        { toolCalls: [{ id: "c1", name: "lookup", args: { id: "A17" } }] },
        { toolCalls: [{ id: "c2", name: "refund", args: { id: "A17" } }] },
        { text: "Refund issued." },
      ],
    }),
  );
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({
      ...config,
      tenants: [
        {
          name: "bench",
          apiKeys: [{ sha256: createHash("sha256").update("bench-key").digest("hex") }],
          scripts: ["policy.ts"],
          hostTools: "tools.mjs",
          model: "scripted:model.json",
          limits: { runsPerMinute: 1_000_000, requestsPerMinute: 10_000_000, maxEventStreams: 1000, ...limits },
        },
      ],
    }),
  );
}

/** Starts `hookbox serve` on a free port; `nodeArgs` go to its Node (`--cpu-prof`, ...). */
export async function startServe(dir, store, { nodeArgs = [] } = {}) {
  const child = spawn(
    process.execPath,
    [...nodeArgs, join(root, "bin/hookbox.js"), "serve", "--port", "0", "--store", store, "--config", join(dir, "config.json")],
    { stdio: ["ignore", "pipe", "pipe"], cwd: dir },
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
    pid: child.pid,
    stderr: () => stderr,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.kill("SIGTERM");
      }),
  };
}

const headers = { authorization: "Bearer bench-key", "content-type": "application/json" };

/*
 * The clients speak HTTP through node:http with one keep-alive agent, not fetch: they share the machine's two cores
 * with serve and its workers, and fetch (undici, web streams) cost them ~1.4 ms of CPU a run against ~0.7 here
 * (BENCHMARKS.md, "The bench's clients"), CPU the server then lacks. The requests are the same.
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/** One request; resolves with its status and whole body (an SSE stream ends after run-finished). */
function request(url, method, body) {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(url, { method, headers, agent }, (response) => {
      response.setEncoding("utf8");
      let text = "";
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode, text }));
      response.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

export async function newSession(url) {
  const response = await request(`${url}/v1/sessions`, "POST", "{}");
  const session = JSON.parse(response.text);
  if (!session.sessionId) throw new Error(`session: ${response.status} ${response.text}`);
  return session.sessionId;
}

/** One run in a session (a new one by default), read to its end over SSE; resolves with its latency in ms. */
export async function oneRun(url, sessionId) {
  const started = performance.now();
  const session = sessionId ?? (await newSession(url));
  const run = await request(`${url}/v1/sessions/${session}/runs`, "POST", JSON.stringify({ prompt: "Refund A17" }));
  if (run.status !== 202) throw new Error(`run start: ${run.status} ${run.text}`);
  const { runId } = JSON.parse(run.text);
  const { text } = await request(`${url}/v1/runs/${runId}/events`, "GET");
  if (!text.includes('"run-finished"') || !text.includes('"completed"'))
    throw new Error(`run ${runId} did not complete: ${text.slice(-300)}`);
  return performance.now() - started;
}

/**
 * `clients` concurrent clients, each doing `runsPerClient` runs one after another, after a warm-up of
 * WARM_UP_RUNS (the steady state). Besides
 * throughput and latency: serve's own CPU per run and its sandbox workers' (everything below it), measured
 * from procfs over the timed part only, and the clients' own (this process's: they share the machine's cores).
 */
export async function httpWorkload(dir, store, { clients = 50, runsPerClient = 4, nodeArgs } = {}) {
  const server = await startServe(dir, store, { nodeArgs });
  try {
    await warmUp([server.url], clients, { runs: WARM_UP_RUNS });
    const cpuBefore = treeCpuMs(server.pid);
    const clientsBefore = process.cpuUsage();
    const timed = await timedRuns([server.url], { clients, runsPerClient });
    const clientsSpent = process.cpuUsage(clientsBefore);
    const cpuAfter = treeCpuMs(server.pid);
    return {
      ...timed,
      cpuMsPerRun: (cpuAfter.own - cpuBefore.own) / timed.runs,
      workerCpuMsPerRun: (cpuAfter.below - cpuBefore.below) / timed.runs,
      clientCpuMsPerRun: (clientsSpent.user + clientsSpent.system) / 1000 / timed.runs,
    };
  } finally {
    await server.stop();
  }
}

/**
 * Untimed runs before a CPU figure is taken (http_cpu_ms_per_run), after the first 10: serve's CPU per run goes on
 * falling for some thousands of runs of this workload while V8 optimizes the request path. Its optimizing compiler
 * takes a function once it has run about 3,000 times over (V8's --invocation-count-for-turbofan), and most of a run's
 * functions run once or a few times a run, so the compiler works in V8's helper threads until ~3,000 runs (`node
 * scripts/bench/serve-threads.mjs`; `scripts/bench/warm-up.mjs --short 12 --long 60` reads lower after 3,000 than
 * after 600 side by side, `--short 60 --long 120` no lower after 6,000: BENCHMARKS.md, "Serve's steady state").
 * Node 24's V8 goes on compiling to ~4,000 runs (serve-threads.mjs: its helper threads' share falls there). A
 * steady-state figure waits those out.
 */
export const WARM_UP_RUNS = 4000;

/**
 * Runs on every server before the timed part: up to 10 at once (the bundle cache, the workers' isolates), then
 * `runs` more from the `clients` clients (each an equal share, one after another), so V8 has compiled the path.
 * Resolves with how many runs it made, on all the servers together.
 */
export async function warmUp(urls, clients, { runs = 0 } = {}) {
  const first = urls.flatMap((url) => Array.from({ length: Math.min(clients, 10) }, () => oneRun(url)));
  await Promise.all(first);
  if (runs === 0) return first.length;
  return first.length + (await timedRuns(urls, { clients, runsPerClient: Math.ceil(runs / clients) })).runs;
}

/**
 * `clients` concurrent clients, spread round-robin over `urls` (each client sends all its requests to one server),
 * each doing `runsPerClient` runs one after another: runs per second and run latency (ms).
 */
export async function timedRuns(urls, { clients, runsPerClient }) {
  const latencies = [];
  const begin = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let i = 0; i < runsPerClient; i++) latencies.push(await oneRun(urls[client % urls.length]));
    }),
  );
  const elapsedS = (performance.now() - begin) / 1000;
  latencies.sort((a, b) => a - b);
  return { runsPerS: latencies.length / elapsedS, p50: percentile(latencies, 50), p99: percentile(latencies, 99), runs: latencies.length };
}
