// The sandbox worker's own CPU per tool call of the loop bench, measured apart from the host:
// `node scripts/bench/worker-floor.mjs` (after `npm run build`) prints one JSON object. It starts the real worker
// (dist/sandbox-worker.js, without the wall) and drives its fd-3 pipe directly with the exec messages the host sends
// in scripts/bench/loop-throughput.mjs: the bench's policy, 8 runs at a time, each run a fresh context that gets 100
// tool calls (a beforeToolCall and an afterToolCall message each) and then `close-run`, 16 messages in flight as the
// host's gate pipelines them. The driver does the least a host can (no validation, events or loop), so the worker's
// CPU (all its threads, from /proc/PID/task/*/schedstat) is most of what is counted, and load on the machine moves
// it less than it moves loop-floor.mjs's figure. Keys, medians over the blocks:
// - worker_cpu_us_per_call: the worker's CPU per tool call (two exec messages), contexts and their closing included;
// - segments_cpu_us_per_call: of the worker's, the isolate's CPU in the hooks' segments (the replies' `cpuMs`,
//   what the worker charges the callbacks: the runtime's and the script's code, not the contexts' making);
// - driver_cpu_us_per_call: this process's (the stand-in host's) CPU per tool call;
// - worker_cpu_us_per_run: the worker's per run (worker_cpu_us_per_call x the calls of a run).
// `--runs N` (8) runs at a time and `--calls-per-run N` (100) tool calls each: `--runs 50 --calls-per-run 2` is
// the serve bench's shape (a run's 4 hooks in a context of its own, 50 runs in flight), where making and collecting
// the contexts is most of the worker's CPU.
// `--dist DIR`: another build; given more than once (A/B), one worker per build, all started at once, their blocks
// alternating, so each build is measured under the same load (one JSON line per build). `--node-flags "..."`:
// flags for the workers' node (as HOOKBOX_WORKER_EXEC_ARGV adds them under the pool). HOOKBOX_WORKER_POLL_US is
// passed on as the pool passes it.
import { spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { importSource, LOOP_POLICY_FACTORY } from "./fixtures.mjs";
import { cpuMs } from "./proc-cpu.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const argument = (name) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
};
const dists = process.argv.flatMap((value, at) => (process.argv[at - 1] === "--dist" ? [resolve(value)] : []));
if (dists.length === 0) dists.push(join(root, "dist"));
const nodeFlags = (argument("--node-flags") ?? "").split(" ").filter(Boolean);

const RUNS = Number(argument("--runs") ?? 8);
const CALLS_PER_RUN = Number(argument("--calls-per-run") ?? 100);
/** As the host's gate pipelines a tenant's messages (PIPELINE_DEPTH, src/sandbox/callback-gate.ts). */
const DEPTH = 16;
const BLOCK_CALLS = 4000;
const BLOCKS = 9;

// cpuMs above the default 200: on a loaded machine a hook was charged 220-385 ms of a slow GC pause (both builds of
// an A/B), which failed the whole bench; it measures CPU, not limits.
const LIMITS = { memoryMb: 64, cpuMs: 2000, wallMs: 5000, maxPayloadBytes: 8 * 1048576, maxLogChars: 8192, logsPerSecond: 100 };

/** A hook payload with the fields the host sends. */
function payload(runId, index, after) {
  const common = {
    sessionId: runId,
    inferenceId: "inf_01a214e010cb45920c6f9a896084fe01",
    traceId: "eec994e17bd58afc977141f59d1de0b3",
    turnId: "turn_01a214e010cb35e97594205ef23210a1",
    timestampMs: 1795646558423 + index,
    tags: {},
    userContext: { originalUserRequest: "go", timestampMs: 1795646558411 },
    budget: { iteration: 1 + Math.floor(index / 10), maxIterations: 20, tokensUsed: 0, costUsd: 0, retriesLeft: 20 },
  };
  const call = { id: `c${Math.floor(index / 10)}_${index % 10}`, name: "echo", args: { n: index % 10 }, origin: "model" };
  return JSON.stringify([
    after
      ? { ...common, phase: "afterToolCall", call, attempt: 1, durationMs: 0, result: { n: index % 10 } }
      : { ...common, phase: "beforeToolCall", call, attempt: 1 },
  ]);
}

// The frames are the host's (src/sandbox/wire/framing.ts), and so is the protocol's stop rule, as the host counts it.
const framing = await importSource(join(root, "src/sandbox/wire/framing.ts"));
const frameOf = (message) => framing.encodeFrame(message);
const protocol = await importSource(join(root, "src/sandbox/wire/protocol.ts"));

/** One worker of `dist`, driven as the host's gate drives it. */
async function startWorker(dist) {
  const worker = spawn(process.execPath, ["--no-node-snapshot", ...nodeFlags, join(dist, "sandbox-worker.js")], {
    stdio: ["ignore", "inherit", "inherit", "pipe"],
    env: process.env.HOOKBOX_WORKER_POLL_US === undefined ? {} : { HOOKBOX_WORKER_POLL_US: process.env.HOOKBOX_WORKER_POLL_US },
  });
  const pipe = worker.stdio[3];
  let onReply = () => {};
  let segmentsMs = 0;
  const reader = new framing.FrameReader((reply) => onReply(reply));
  pipe.on("data", (chunk) => reader.push(chunk));
  await new Promise((ready) => (onReply = ready));
  pipe.write(frameOf({ type: "bundle", hash: "bench-policy", code: LOOP_POLICY_FACTORY, filename: "bench-policy.js" }));

  let seq = 0;
  let callId = 0;
  let runNumber = 0;
  let limitsSent = false;
  /** The tenant's stops this worker reported: every message says it saw them, or the worker refuses it. */
  let stops = 0;
  const runs = Array.from({ length: RUNS }, () => ({ runId: `run-${++runNumber}`, sent: 0 }));
  let turn = 0;

  /** The next exec message: the runs take turns, each sends its calls' before and after hooks in order. */
  function nextFrames() {
    const run = runs[turn++ % RUNS];
    const index = Math.floor(run.sent / 2);
    const after = run.sent % 2 === 1;
    const message = {
      type: "call",
      seq: ++seq,
      tenant: "bench-loop",
      runId: run.runId,
      script: "bench-policy",
      bundleHash: "bench-policy",
      callId: ++callId,
      kind: "hook",
      target: after ? "afterToolCall" : "beforeToolCall",
      args: payload(run.runId, index, after),
      stops,
    };
    if (!limitsSent) ((message.limits = LIMITS), (limitsSent = true));
    const frames = [frameOf(message)];
    if (++run.sent === 2 * CALLS_PER_RUN) {
      frames.push(frameOf({ type: "close-run", tenant: "bench-loop", runId: run.runId }));
      run.runId = `run-${++runNumber}`;
      run.sent = 0;
    }
    return frames;
  }

  /** Sends `messages` exec messages, DEPTH in flight; the frames of one turn go in one write, as the host's. */
  function exchange(messages) {
    return new Promise((done, fail) => {
      let sent = 0;
      let answered = 0;
      let pending = [];
      const flush = () => {
        if (pending.length > 0) pipe.write(pending.length === 1 ? pending[0] : Buffer.concat(pending));
        pending = [];
      };
      const send = () => {
        sent++;
        pending.push(...nextFrames());
      };
      onReply = (reply) => {
        if (reply.type === "done" && reply.refused === true) {
          // Sent before the worker's latest stop reached this driver: not run; another goes in its place.
          sent--;
        } else {
          const outcome = reply.outcomes?.[0];
          if (reply.type !== "done" || outcome?.type !== "settled")
            return fail(new Error(`${dist}: unexpected reply: ${JSON.stringify(reply)}`));
          if (protocol.isStop(reply)) stops++;
          segmentsMs += reply.cpuMs ?? 0;
          if (++answered === messages) return done();
        }
        if (sent < messages) {
          const first = pending.length === 0;
          send();
          if (first) queueMicrotask(flush);
        }
      };
      for (let i = 0; i < DEPTH && sent < messages; i++) send();
      flush();
    });
  }

  const measured = { dist, workerUs: [], segmentsUs: [], driverUs: [] };
  /** One block of BLOCK_CALLS tool calls, its CPU counted. */
  async function block() {
    const workerBefore = cpuMs(worker.pid);
    const driverBefore = ownUs();
    segmentsMs = 0;
    await exchange(2 * BLOCK_CALLS);
    measured.workerUs.push(((cpuMs(worker.pid) - workerBefore) * 1000) / BLOCK_CALLS);
    measured.driverUs.push((ownUs() - driverBefore) / BLOCK_CALLS);
    measured.segmentsUs.push((segmentsMs * 1000) / BLOCK_CALLS);
  }
  return { warmUp: () => exchange(2 * BLOCK_CALLS), block, measured, kill: () => worker.kill("SIGKILL") };
}

const round = (value) => Math.round(value * 10) / 10;
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ownUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
const workers = [];
for (const dist of dists) workers.push(await startWorker(dist));
for (const worker of workers) await worker.warmUp(); // the worker's code, the runtime's code cache
for (let block = 0; block < BLOCKS; block++) for (const worker of workers) await worker.block();
for (const { measured, kill } of workers) {
  kill();
  process.stdout.write(
    `${JSON.stringify({
      dist: measured.dist,
      nodeFlags: nodeFlags.join(" "),
      worker_cpu_us_per_call: round(median(measured.workerUs)),
      worker_cpu_us_per_run: round(median(measured.workerUs) * CALLS_PER_RUN),
      segments_cpu_us_per_call: round(median(measured.segmentsUs)),
      driver_cpu_us_per_call: round(median(measured.driverUs)),
    })}\n`,
  );
}
process.exit(0);
