// How fast the host stops and recovers: the speed goals that the tests leave out on purpose (a test waits for the
// event and bounds it generously, so a loaded machine cannot make it red; the figures belong here). Measured through
// the library (dist/): a cancel during a pause, a running tool, a model call and a retry backoff (goal: under
// 100 ms each); a sandbox worker SIGKILLed mid-call until the call fails closed (goal: under 1 s); an infinite loop
// under a 100 ms CPU limit until it is ended (goal: under 1 s); `hookbox run` exiting while a host tool that
// ignores its abort signal still sleeps (goal: well under the tool's 5 s).
// Run: `npm run build && node scripts/bench/recovery.mjs [--rounds N]`; prints one JSON object (progress on stderr).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { percentile, script } from "./fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const log = (...parts) => process.stderr.write(`${parts.join(" ")}\n`);
const rounds = Number(process.argv[process.argv.indexOf("--rounds") + 1]) || 10;
const { createSandboxPool, createTenantRuntime } = await import(pathToFileURL(join(root, "dist", "index.js")).href);

const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-recovery-"));
const LONG = 600_000;

function steps(list) {
  const file = join(dir, `model-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ steps: list }));
  return { kind: "scripted", file };
}

/** Starts a run, waits for the event `ready` accepts, cancels, and returns the ms until the run has ended. */
async function cancelAfter(runtime, options, ready) {
  const handle = runtime.start({ sessionId: "sess_bench", prompt: "x", ...(options ? { options } : {}) });
  for await (const event of handle.events()) if (ready(event)) break;
  const started = performance.now();
  handle.cancel("bench");
  const result = await handle.wait();
  if (result.status !== "cancelled") throw new Error(`expected cancelled, got ${result.status}`);
  return performance.now() - started;
}

// These runs have no scripts: no sandbox is needed.
const noPool = {
  tenant() {
    throw new Error("no sandbox in this bench");
  },
  close: async () => {},
};
const tool = (name, handler) => ({ name, description: name, parameters: { type: "object" }, handler });
const call = (name) => ({ toolCalls: [{ id: "c1", name, args: {} }] });

async function cancels() {
  const cases = {
    pause: [{ step: true, pauseTimeoutMs: LONG }, (e) => e.type === "debugger.pause", [call("echo"), { text: "done" }], {}],
    tool: [undefined, (e) => e.type === "tool-started", [call("hang"), { text: "never" }], {}],
    model: [undefined, (e) => e.type === "inference-started", [{ text: "slow", delayMs: LONG }], {}],
    backoff: [
      { retry: { budgetMs: 2 * LONG } },
      (e) => e.type === "tool-retry",
      [call("fail"), { text: "never" }],
      { hooks: [{ name: "retrier", onToolError: () => ({ action: "retry", backoffMs: LONG }) }] },
    ],
  };
  const tools = [
    tool("echo", (args) => args),
    tool(
      "hang",
      (_args, _ctx, { signal }) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
    ),
    tool("fail", () => {
      throw new Error("nope");
    }),
  ];
  const out = {};
  for (const [name, [options, ready, list, host]] of Object.entries(cases)) {
    const runtime = await createTenantRuntime({ name: "bench", scripts: [], model: steps(list) }, noPool, { host: { tools, ...host } });
    const samples = [];
    for (let i = 0; i < rounds; i++) samples.push(await cancelAfter(runtime, options, ready));
    out[`cancel_${name}_ms_p50`] = percentile(samples, 50);
    out[`cancel_${name}_ms_max`] = Math.max(...samples);
    log(`cancel during ${name}: p50 ${out[`cancel_${name}_ms_p50`].toFixed(2)} ms, max ${out[`cancel_${name}_ms_max`].toFixed(2)} ms`);
  }
  return out;
}

function cpuTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

async function until(condition) {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** A worker SIGKILLed while the call spins in it: ms from the kill until the call fails closed. */
async function workerDeath() {
  const pool = createSandboxPool({ workers: 2 });
  const source = script(
    "spin",
    `export default { tools: [{ name: "work", description: "", handler(args) { if (args.spin) { for (;;) {} } return {}; } }] };`,
  );
  const ctx = {
    toolName: "work",
    callId: "c",
    sessionId: "s",
    inferenceId: "i",
    traceId: "t",
    turnId: "u",
    timestampMs: 0,
    attempt: 1,
    tags: {},
  };
  const samples = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const sandbox = pool.tenant(`doomed-${i}`, { cpuMs: LONG, wallMs: LONG });
      const run = await sandbox.openRun({ runId: `r${i}`, scripts: await sandbox.load([source]) });
      const inFlight = run.callTool("spin", "work", { spin: true }, ctx).then(
        () => "settled",
        (error) => error.code,
      );
      let worker;
      await until(() => (worker = pool.workers().find((info) => info.tenants.includes(`doomed-${i}`))) !== undefined);
      const ticks = cpuTicks(worker.pid);
      await until(() => cpuTicks(worker.pid) - ticks >= 2);
      const killed = performance.now();
      process.kill(worker.pid, "SIGKILL");
      const code = await inFlight;
      samples.push(performance.now() - killed);
      if (code !== "SANDBOX_CRASHED") throw new Error(`expected SANDBOX_CRASHED, got ${code}`);
    }
  } finally {
    await pool.close();
  }
  log(
    `worker killed mid-call: p50 ${percentile(samples, 50).toFixed(1)} ms, max ${Math.max(...samples).toFixed(1)} ms until the call failed`,
  );
  return { worker_death_fail_ms_p50: percentile(samples, 50), worker_death_fail_ms_max: Math.max(...samples) };
}

/** An infinite loop under a 100 ms CPU limit: ms until the call is ended with SANDBOX_TIMEOUT. */
async function loopContained() {
  const pool = createSandboxPool({ workers: 2 });
  const source = script("loop", `export default { hooks: { beforeToolCall() { for (;;) {} } } };`);
  const payload = {
    phase: "beforeToolCall",
    call: { id: "c", name: "t", args: {}, origin: "host" },
    attempt: 1,
    sessionId: "s",
    inferenceId: "i",
    traceId: "t",
    turnId: "u",
    timestampMs: 0,
    tags: {},
  };
  const samples = [];
  try {
    const sandbox = pool.tenant("looper");
    const manifests = await sandbox.load([source]);
    pool.tenant("looper", { cpuMs: 100, wallMs: 1000, memoryMb: 32 });
    for (let i = 0; i < rounds; i++) {
      const run = await sandbox.openRun({ runId: `loop-${i}`, scripts: manifests });
      const started = performance.now();
      const code = await run.callHook("loop", "beforeToolCall", payload).then(
        () => "settled",
        (error) => error.code,
      );
      samples.push(performance.now() - started);
      if (code !== "SANDBOX_TIMEOUT") throw new Error(`expected SANDBOX_TIMEOUT, got ${code}`);
      await run.close();
    }
  } finally {
    await pool.close();
  }
  log(`infinite loop at 100 ms CPU: ended after p50 ${percentile(samples, 50).toFixed(1)} ms, max ${Math.max(...samples).toFixed(1)} ms`);
  return { loop_contained_ms_p50: percentile(samples, 50), loop_contained_ms_max: Math.max(...samples) };
}

/** `hookbox run` whose host tool ignores its abort signal and sleeps 5 s: ms until the CLI has exited. */
async function cliExit() {
  const tools = join(root, "test/fixtures/cli/regression-tools.mjs");
  const model = steps([call("stubborn_sleep"), { text: "done" }]).file;
  const samples = [];
  for (let i = 0; i < Math.min(rounds, 5); i++) {
    const started = performance.now();
    await new Promise((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          join(root, "bin/hookbox.js"),
          "run",
          "--model",
          `scripted:${model}`,
          "--host-tools",
          tools,
          "--prompt",
          "x",
          "--json",
          "--tool-timeout-ms",
          "200",
        ],
        { stdio: "ignore" },
      );
      child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`hookbox run exited ${code}`))));
    });
    samples.push(performance.now() - started);
  }
  log(`hookbox run with a stubborn 5 s tool (200 ms tool timeout): exits after p50 ${percentile(samples, 50).toFixed(0)} ms`);
  return { cli_exit_stubborn_tool_ms_p50: percentile(samples, 50) };
}

const figures = { ...(await cancels()), ...(await workerDeath()), ...(await loopContained()), ...(await cliExit()) };
for (const key of Object.keys(figures)) figures[key] = Math.round(figures[key] * 100) / 100;
process.stdout.write(`${JSON.stringify(figures)}\n`);
