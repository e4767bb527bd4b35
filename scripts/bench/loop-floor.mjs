// The floor under loop_tool_calls_per_s on this machine: `node scripts/bench/loop-floor.mjs` (after `npm run build`)
// prints one JSON object. Each tool call of the loop bench (scripts/bench/loop-throughput.mjs) costs the host its
// loop's own work plus two sandboxed hooks, each a message to a worker process that runs it in an isolate and
// answers. The floor takes each part at its least, measured here:
// - loop_no_hooks_*: the same workload (one tenant, 8 runs, 10 iterations of 10 calls, maxParallelTools 4) with
//   a script that declares no hooks: the loop's own CPU per tool call, nothing crossing to a worker;
// - pipe_*: a bare worker, a child that reads length-prefixed JSON frames from a pipe, runs the bench's hook with
//   isolated-vm `applySync` and writes the JSON answer back, sent 16 messages in flight at a time as the host's gate
//   pipelines them: the least CPU one hook costs each side (no validation, no events, no limits);
// - loop_*: the bench itself, with the CPU time of the host and of its worker processes per tool call.
// Floor: the host needs no_hooks + 2 x pipe_host per call and the worker 2 x pipe_child; they run in parallel
// on this machine's cores, so calls/s <= 1e6 / each side's CPU and <= cores x 1e6 / their sum.
// `--dist DIR`: another build (A/B, e.g. a `git archive` of another commit, built); `--loop-only`: the loop_* keys only;
// `--no-hooks-only`: the loop_no_hooks_* keys only. `--rounds N`: measured rounds of the loop_* and loop_no_hooks_*
// workloads (default the bench's, 20, after its 30 warm-up rounds: the steady state, loop-throughput.mjs).
// `--curve N`: the bench's workload for N rounds from the first, one line per round (calls/s, host CPU a call).
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { measureLoopToolCallsPerSecond } from "./loop-throughput.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const distArgument = process.argv.indexOf("--dist");
const dist = resolve(distArgument > 0 ? process.argv[distArgument + 1] : join(root, "dist"));
const round = (value) => Math.round(value * 10) / 10;
const roundsArgument = process.argv.indexOf("--rounds");
const measuredRounds = roundsArgument > 0 ? Number(process.argv[roundsArgument + 1]) : 20;
if (!Number.isInteger(measuredRounds) || measuredRounds < 1) throw new Error("--rounds takes a positive integer");

/** The bench's hooks, as the bare worker runs them. */
const HOOKS = `(function (kind, text) {
  const p = JSON.parse(text)[0];
  const r = kind === "before" ? (p.call.args.n >= 0 ? { action: "proceed" } : { action: "deny", reason: "negative" }) : { result: { ...p.result, checked: true } };
  return JSON.stringify(r);
})`;

const CHILD = `
  const ivm = require("isolated-vm");
  const { Socket } = require("node:net");
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  const context = isolate.createContextSync();
  const hook = context.evalSync(${JSON.stringify(HOOKS)}, { reference: true });
  const pipe = new Socket({ fd: 3, readable: true, writable: true });
  let buffered = Buffer.alloc(0);
  pipe.on("data", (chunk) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    const out = [];
    while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32LE(0)) {
      const length = buffered.readUInt32LE(0);
      const message = JSON.parse(buffered.toString("utf8", 4, 4 + length));
      buffered = buffered.subarray(4 + length);
      const reply = message.type === "stats"
        ? { type: "stats", cpu: process.cpuUsage() }
        : { type: "done", seq: message.seq, value: hook.applySync(undefined, [message.kind, message.args], { result: { copy: true } }) };
      const text = JSON.stringify(reply);
      const frame = Buffer.allocUnsafe(4 + Buffer.byteLength(text));
      frame.writeUInt32LE(frame.length - 4, 0);
      frame.write(text, 4);
      out.push(frame);
    }
    if (out.length) pipe.write(out.length === 1 ? out[0] : Buffer.concat(out));
  });
  pipe.on("end", () => process.exit(0));`;

function frameOf(message) {
  const text = JSON.stringify(message);
  const frame = Buffer.allocUnsafe(4 + Buffer.byteLength(text));
  frame.writeUInt32LE(frame.length - 4, 0);
  frame.write(text, 4);
  return frame;
}

/** The bench's hook payloads, as the host sends them (a beforeToolCall and an afterToolCall of an echo call). */
function payloads() {
  const common = { sessionId: "bench-0", inferenceId: "inf_1", traceId: "trace_1", turnId: "turn_1", timestampMs: 1, tags: {} };
  const budget = { iteration: 1, maxIterations: 20, tokensUsed: 0, costUsd: 0, retriesLeft: 20 };
  const call = { id: "c0_3", name: "echo", args: { n: 3 }, origin: "model" };
  return {
    before: JSON.stringify([{ phase: "beforeToolCall", call, attempt: 1, ...common, budget }]),
    after: JSON.stringify([{ phase: "afterToolCall", call, attempt: 1, result: { n: 3 }, durationMs: 0, ...common, budget }]),
  };
}

async function pipeFloor({ messages = 40_000, depth = 16 } = {}) {
  const child = spawn(process.execPath, ["--no-node-snapshot", "-e", CHILD], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit", "pipe"],
  });
  const pipe = child.stdio[3];
  const { before, after } = payloads();
  let buffered = Buffer.alloc(0);
  let onReply;
  pipe.on("data", (chunk) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32LE(0)) {
      const length = buffered.readUInt32LE(0);
      const reply = JSON.parse(buffered.toString("utf8", 4, 4 + length));
      buffered = buffered.subarray(4 + length);
      onReply(reply);
    }
  });
  const stats = () =>
    new Promise((resolve) => {
      onReply = (reply) => resolve(reply.cpu);
      pipe.write(frameOf({ type: "stats" }));
    });
  const exchange = (count) =>
    new Promise((resolve) => {
      let sent = 0;
      let answered = 0;
      let pending = [];
      const send = () => {
        const seq = sent++;
        const kind = seq % 2 === 0 ? "before" : "after";
        pending.push(frameOf({ type: "call", seq, tenant: "bench-loop", kind, args: kind === "before" ? before : after }));
      };
      const flush = () => {
        if (pending.length) pipe.write(pending.length === 1 ? pending[0] : Buffer.concat(pending));
        pending = [];
      };
      onReply = (reply) => {
        JSON.parse(reply.value);
        if (++answered === count) return resolve();
        if (sent < count) {
          send();
          if (pending.length === 1) queueMicrotask(flush);
        }
      };
      for (let i = 0; i < depth && sent < count; i++) send();
      flush();
    });
  await exchange(2000); // warm-up
  const childBefore = await stats();
  const hostBefore = process.cpuUsage();
  const started = performance.now();
  await exchange(messages);
  const seconds = (performance.now() - started) / 1000;
  const host = process.cpuUsage(hostBefore);
  const childAfter = await stats();
  child.kill();
  const childUs = childAfter.user + childAfter.system - childBefore.user - childBefore.system;
  return {
    pipe_messages_per_s: Math.round(messages / seconds),
    pipe_host_cpu_us_per_message: round((host.user + host.system) / messages),
    pipe_child_cpu_us_per_message: round(childUs / messages),
  };
}

/** utime + stime of this process's descendants, us (the workers, and their wall's processes). */
function descendantsCpuUs() {
  const children = (pid) =>
    readdirSync(`/proc/${pid}/task`).flatMap((task) => {
      try {
        return readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
      } catch {
        return [];
      }
    });
  let total = 0;
  const stack = children(process.pid);
  while (stack.length > 0) {
    const pid = stack.pop();
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      total += (Number(fields[11]) + Number(fields[12])) * 10_000; // clock ticks of 10 ms
      stack.push(...children(pid));
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** The loop bench with its CPU counted: the host's and its workers', per tool call. */
async function loop(prefix, hooks) {
  let host;
  let workers;
  const rounds = measuredRounds;
  const callsPerSecond = await measureLoopToolCallsPerSecond({
    dist,
    rounds,
    hooks,
    onMeasure: {
      start: () => ({ host: process.cpuUsage(), workers: descendantsCpuUs() }),
      end: (from) => {
        const used = process.cpuUsage(from.host);
        host = used.user + used.system;
        workers = descendantsCpuUs() - from.workers;
      },
    },
  });
  const calls = rounds * 8 * 10 * 10;
  return {
    [`${prefix}_tool_calls_per_s`]: Math.round(callsPerSecond),
    [`${prefix}_host_cpu_us_per_call`]: round(host / calls),
    [`${prefix}_worker_cpu_us_per_call`]: round(workers / calls),
  };
}

const curveArgument = process.argv.indexOf("--curve");
if (curveArgument > 0) {
  await measureLoopToolCallsPerSecond({
    dist,
    warmUpRounds: 0,
    rounds: Number(process.argv[curveArgument + 1]),
    onRound: ({ index, callsPerSecond, hostCpuUsPerCall }) =>
      process.stdout.write(
        `${JSON.stringify({ round: index + 1, calls_per_s: Math.round(callsPerSecond), host_cpu_us_per_call: round(hostCpuUsPerCall) })}\n`,
      ),
  });
  process.exit(0);
}
if (process.argv.includes("--loop-only")) {
  process.stdout.write(`${JSON.stringify({ dist, ...(await loop("loop", true)) })}\n`);
  process.exit(0);
}
if (process.argv.includes("--no-hooks-only")) {
  process.stdout.write(`${JSON.stringify({ dist, ...(await loop("loop_no_hooks", false)) })}\n`);
  process.exit(0);
}
const noHooks = await loop("loop_no_hooks", false);
const pipe = await pipeFloor();
const bench = await loop("loop", true);
const cores = availableParallelism();
const hostFloor = noHooks.loop_no_hooks_host_cpu_us_per_call + 2 * pipe.pipe_host_cpu_us_per_message;
const workerFloor = 2 * pipe.pipe_child_cpu_us_per_message;
const floor = Math.min(1e6 / hostFloor, 1e6 / workerFloor, (cores * 1e6) / (hostFloor + workerFloor));
process.stdout.write(
  `${JSON.stringify({
    cores,
    ...noHooks,
    ...pipe,
    ...bench,
    floor_host_cpu_us_per_call: round(hostFloor),
    floor_worker_cpu_us_per_call: round(workerFloor),
    loop_floor_tool_calls_per_s: Math.round(floor),
  })}\n`,
);
