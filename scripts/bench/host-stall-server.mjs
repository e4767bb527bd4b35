// Host stall under each attack (BENCHMARKS.md): a real `hookbox serve` (bin/hookbox.js, needs `npm run build`)
// on loopback with an attacker tenant per attack and a victim tenant; the victim's run must complete during
// every attack. Two figures per attack, the worst of --repeat rounds:
// - cpu: the longest stretch of the server main thread's own CPU time between two ticks of a 10 ms timer
//   (stall-meter.mjs, preloaded with --import): the host work that blocked the event loop, not counting time
//   spent waiting for a CPU on a shared machine;
// - wall: the slowest /healthz answer, timed from outside every 10 ms (includes that waiting).
//
//   node scripts/bench/host-stall-server.mjs [--json] [--repeat N] [--only NAME]
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readSseMessages } from "../sse-messages.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const MiB = 1024 * 1024;
const { values: flags } = parseArgs({ options: { json: { type: "boolean" }, repeat: { type: "string" }, only: { type: "string" } } });
const repeat = Number(flags.repeat ?? 3);

const BIG_TOOL = `import { defineScript } from "hookbox";
export default defineScript({ name: "flood", tools: [{ name: "big", description: "big", parameters: { type: "object" },
  async handler(args) { return "x".repeat(args.bytes); } }] });`;
const BLOAT = `import { defineScript } from "hookbox";
export default defineScript({ name: "bloat", middleware: [async function bloat(turn, next) {
  const out = await next(turn);
  for (let i = 0; i < 20000; i++) out.blocks.push({ id: "b" + i, kind: "llm_text", payload: { text: "y".repeat(300) }, metadata: {} });
  return out; }] });`;
const HOST_TOOLS = `export default [
  { name: "record", description: "r", parameters: { type: "object" }, handler: (args) => ({ recorded: args.id ?? null }) },
  { name: "stray", description: "a host tool with a bug: a detached rejection", parameters: { type: "object" },
    handler: () => { void Promise.reject(new Error("stray rejection from a buggy host tool")); return { ok: true }; } },
];`;

const calls = (count, name, args) => Array.from({ length: count }, (_, i) => ({ id: `c${i}`, name, args: { ...args, id: `c${i}` } }));
const tenants = {
  victim: { steps: [{ toolCalls: calls(2, "record", {}) }, { text: "ok" }] },
  flood: { steps: [{ toolCalls: calls(40, "big", { bytes: 8 * MiB - 64 }) }, { text: "never" }], scripts: { "flood.ts": BIG_TOOL } },
  hoarder: {
    steps: [{ toolCalls: calls(40, "big", { bytes: 8 * MiB - 64 }) }, { text: "never" }],
    scripts: { "flood.ts": BIG_TOOL },
    limits: { maxToolResultBytes: 9 * MiB, maxTurnBytes: 512 * MiB, memoryMb: 128 },
  },
  packrat: {
    steps: [{ toolCalls: calls(40, "big", { bytes: 400_000 }) }, { text: "never" }],
    scripts: { "flood.ts": BIG_TOOL },
    limits: { maxStoreBytes: 3 * MiB },
  },
  greedy: { steps: [{ toolCalls: calls(20_000, "record", {}) }, { text: "never" }] },
  bloater: { steps: [{ text: "hi" }], scripts: { "bloat.ts": BLOAT }, limits: { cpuMs: 5000 } },
  archivist: {
    steps: [{ toolCalls: calls(64, "big", { bytes: 200_000 }) }, { text: "archived" }],
    scripts: { "flood.ts": BIG_TOOL },
    limits: { maxRunBytes: 64 * MiB, maxTurnBytes: 32 * MiB },
  },
  limited: {
    steps: [{ toolCalls: calls(1, "record", {}) }, { text: "hi" }],
    // The paused run must outlast every attack before the stream cap's (a pause that times out ends the run).
    limits: { maxIterations: 3, pauseTimeoutMs: 3_600_000, maxEventStreams: 8 },
  },
  buggy: { steps: [{ toolCalls: calls(20, "stray", {}) }, { text: "done" }] },
};

function writeConfig() {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-stall-"));
  writeFileSync(join(dir, "tools.mjs"), HOST_TOOLS);
  const config = {
    tenants: Object.entries(tenants).map(([name, tenant]) => {
      writeFileSync(join(dir, `${name}-model.json`), JSON.stringify({ steps: tenant.steps }));
      for (const [file, source] of Object.entries(tenant.scripts ?? {})) writeFileSync(join(dir, file), source);
      return {
        name,
        apiKeys: [{ sha256: createHash("sha256").update(`${name}-key`).digest("hex") }],
        scripts: Object.keys(tenant.scripts ?? {}),
        hostTools: "tools.mjs",
        model: `scripted:${name}-model.json`,
        ...(tenant.limits ? { limits: tenant.limits } : {}),
      };
    }),
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  return { config: join(dir, "config.json"), store: join(dir, "store.db") };
}

async function startServe({ config, store }) {
  const nodeFlags = (process.env.HOOKBOX_BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  const meter = join(dirname(fileURLToPath(import.meta.url)), "stall-meter.mjs");
  const child = spawn(process.execPath, [
    ...nodeFlags,
    "--import",
    meter,
    join(root, "bin/hookbox.js"),
    "serve",
    "--port",
    "0",
    "--store",
    store,
    "--config",
    config,
  ]);
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
  /** The stall meter's window since the last call. */
  const meterWindow = async () => {
    const seen = stderr.length;
    child.kill("SIGUSR2");
    for (;;) {
      const match = /stall-meter (\{.*\})\n/.exec(stderr.slice(seen));
      if (match) return JSON.parse(match[1]);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  return { url, child, stderr: () => stderr, meterWindow };
}

const request = async (url, key, method, path, body, headers = {}) => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let parsed = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: response.status, body: parsed };
};

async function readStream(url, key, runId, { keepOpen } = {}) {
  const controller = new AbortController();
  const response = await fetch(`${url}/v1/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${key}` },
    signal: controller.signal,
  });
  if (keepOpen) return { status: response.status, close: () => controller.abort() };
  const events = [];
  await readSseMessages(response.body, ({ data }) => events.push(JSON.parse(data)));
  return { status: response.status, events };
}

async function runToEnd(url, name, extra = {}) {
  const key = `${name}-key`;
  const session = await request(url, key, "POST", "/v1/sessions", {});
  const run = await request(url, key, "POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "go", ...extra });
  if (run.status !== 202) throw new Error(`${name}: run refused ${run.status} ${JSON.stringify(run.body)}`);
  const { events } = await readStream(url, key, run.body.runId);
  return { sessionId: session.body.sessionId, runId: run.body.runId, final: events.at(-1) };
}

function probe(url) {
  let running = true;
  const samples = [];
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const response = await fetch(`${url}/healthz`);
      await response.text();
      samples.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return async () => {
    running = false;
    await loop;
    return Math.max(...samples);
  };
}

const attacks = {
  "none: the victim's run alone (baseline for every row)": async () => undefined,
  "40 tool results of 8 MiB (per-result budget)": async (url) => expectFinal(await runToEnd(url, "flood"), "RUN_BUDGET"),
  "40 tool results of 8 MiB, per-result budget raised (run byte budget)": async (url) =>
    expectFinal(await runToEnd(url, "hoarder"), "RUN_BUDGET"),
  "tenant store quota reached (3 MiB)": async (url) => expectFinal(await runToEnd(url, "packrat"), "STORE_QUOTA"),
  "one inference asking for 20,000 tool calls": async (url) => expectFinal(await runToEnd(url, "greedy"), "RUN_BUDGET"),
  "middleware returning a 6 MB turn of 20k blocks": async (url) => expectFinal(await runToEnd(url, "bloater"), "RUN_BUDGET"),
  "huge stored run (13 MB) replayed by six SSE readers": async (url, state) => {
    const results = await Promise.all(Array.from({ length: 6 }, () => readStream(url, "archivist-key", state.archive.runId)));
    for (const result of results) if (result.events.at(-1)?.type !== "run-finished") throw new Error("replay did not reach run-finished");
  },
  "GET /v1/sessions/:id of that run by six readers": async (url, state) => {
    const results = await Promise.all(
      Array.from({ length: 6 }, () => request(url, "archivist-key", "GET", `/v1/sessions/${state.archive.sessionId}`)),
    );
    for (const result of results) if (result.status !== 200) throw new Error(`session read ${result.status}`);
  },
  "1 MiB rejected body (9,000 tags and an unknown field)": async (url, state) => {
    const fields = Object.fromEntries(Array.from({ length: 9000 }, (_, i) => [`f${i}`, "z".repeat(100)]));
    const body = JSON.stringify({ prompt: "x", tags: fields, unknownField: true });
    await expectStatus(request(url, "limited-key", "POST", `/v1/sessions/${state.limitedSession}/runs`, body), 400);
  },
  "deeply nested body (500k levels)": async (url, state) =>
    expectStatus(request(url, "limited-key", "POST", `/v1/sessions/${state.limitedSession}/runs`, "[".repeat(500_000)), 400),
  "request options above the tenant's limits": async (url, state) =>
    expectStatus(
      request(url, "limited-key", "POST", `/v1/sessions/${state.limitedSession}/runs`, {
        prompt: "x",
        maxIterations: 1000,
        pauseTimeoutMs: 2e9,
      }),
      400,
    ),
  "SSE streams opened past the cap (8 + 20)": async (url, state) => {
    const streams = await Promise.all(
      Array.from({ length: 28 }, () => readStream(url, "limited-key", state.limitedRun, { keepOpen: true })),
    );
    const refused = streams.filter((s) => s.status === 429).length;
    for (const stream of streams) stream.close();
    if (refused === 0) throw new Error(`no stream was refused: ${JSON.stringify(streams.map((s) => s.status))} ${state.limitedRun}`);
  },
  "host tool with a stray rejection (20 calls)": async (url) => expectFinal(await runToEnd(url, "buggy"), undefined),
};

function expectFinal({ final }, errorCode) {
  if (final?.type !== "run-finished" || final.errorCode !== errorCode) throw new Error(`unexpected end: ${JSON.stringify(final)}`);
}
async function expectStatus(pending, status) {
  const result = await pending;
  if (result.status !== status) throw new Error(`expected ${status}, got ${result.status} ${JSON.stringify(result.body)}`);
}

const server = await startServe(writeConfig());
const results = {};
try {
  const state = { archive: await runToEnd(server.url, "archivist") };
  state.limitedSession = (await request(server.url, "limited-key", "POST", "/v1/sessions", {})).body.sessionId;
  // A step-mode run paused after its inference: its event streams stay open until it ends.
  const pausedSession = (await request(server.url, "limited-key", "POST", "/v1/sessions", {})).body.sessionId;
  state.limitedRun = (
    await request(server.url, "limited-key", "POST", `/v1/sessions/${pausedSession}/runs`, { prompt: "x", step: true })
  ).body.runId;
  await server.meterWindow();
  const stopIdle = probe(server.url);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  results["idle (no attack)"] = { wall: await stopIdle(), cpu: (await server.meterWindow()).maxCpuMs };
  for (const [name, attack] of Object.entries(attacks)) {
    if (flags.only && !name.includes(flags.only)) continue;
    const worst = { cpu: 0, wall: 0 };
    for (let i = 0; i < repeat; i++) {
      await server.meterWindow();
      const stop = probe(server.url);
      const [, victim] = await Promise.all([attack(server.url, state), runToEnd(server.url, "victim")]);
      worst.wall = Math.max(worst.wall, await stop());
      worst.cpu = Math.max(worst.cpu, (await server.meterWindow()).maxCpuMs);
      if (victim.final?.status !== "completed") throw new Error(`victim run did not complete during ${name}`);
    }
    results[name] = worst;
  }
} finally {
  server.child.kill("SIGTERM");
}
const round = (ms) => Math.round(ms * 10) / 10;
const rounded = Object.fromEntries(Object.entries(results).map(([name, { cpu, wall }]) => [name, { cpu: round(cpu), wall: round(wall) }]));
if (flags.json) process.stdout.write(`${JSON.stringify({ host_stall_max_ms: rounded, repeat })}\n`);
else {
  process.stdout.write(`${"attack".padEnd(72)} ${"cpu ms".padStart(8)} ${"wall ms".padStart(8)}\n`);
  for (const [name, { cpu, wall }] of Object.entries(rounded))
    process.stdout.write(`${name.padEnd(72)} ${String(cpu).padStart(8)} ${String(wall).padStart(8)}\n`);
}
