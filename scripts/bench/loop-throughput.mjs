// loop_tool_calls_per_s: the real tool loop (dist/index.js), 8 concurrent runs, every tool call passing a
// sandboxed beforeToolCall and afterToolCall. Tool calls per second over all runs.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const POLICY = `
import { defineScript } from "hookbox";
export default defineScript({
  name: "bench-policy",
  hooks: {
    beforeToolCall(p) { return p.call.args.n >= 0 ? { action: "proceed" } : { action: "deny", reason: "negative" }; },
    afterToolCall(p) { return { result: { ...p.result, checked: true } }; },
  },
});`;

const NO_HOOKS = `export default { name: "bench-policy", hooks: {} };`;

/**
 * `hooks: false`: the same workload through a script without hooks (scripts/bench/loop-floor.mjs). `onMeasure`:
 * called as the measured rounds start and end (`end` gets what `start` returned), to count their CPU.
 * A round is 8 runs of 100 tool calls. The measured rounds follow `warmUpRounds` untimed ones: a host keeps
 * running, so the figure is its steady state, V8 done compiling the path. V8 optimizes a function with TurboFan
 * once it has run ~3,000 times, and much of the loop runs once an iteration (80 times a round) or once a run (8):
 * its compilations keep coming in bursts until about round 25, and the host's CPU a tool call keeps falling until
 * then (`node scripts/bench/loop-warm-up.mjs`; BENCHMARKS.md, "The loop bench's steady state on Node 26.12.1").
 * 20 measured rounds take in the old generation's mark-compacts (about one every 10 rounds) at their real rate.
 */
export async function measureLoopToolCallsPerSecond({
  dist,
  concurrentRuns = 8,
  iterations = 10,
  callsPerIteration = 10,
  rounds = 20,
  warmUpRounds = 30,
  hooks = true,
  onMeasure = { start: () => undefined, end: () => {} },
  onRound = () => {},
}) {
  const { createSandboxPool, createTenantRuntime } = await import(join(dist, "index.js"));
  const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-loop-"));
  const script = join(dir, "policy.ts");
  writeFileSync(script, hooks ? POLICY : NO_HOOKS);
  const steps = [];
  for (let i = 0; i < iterations; i++) {
    steps.push({ toolCalls: Array.from({ length: callsPerIteration }, (_, j) => ({ id: `c${i}_${j}`, name: "echo", args: { n: j } })) });
  }
  steps.push({ text: "done" });
  const model = join(dir, "model.json");
  writeFileSync(model, JSON.stringify({ steps }));

  const pool = createSandboxPool();
  const echo = {
    name: "echo",
    description: "echo",
    parameters: { type: "object", properties: { n: { type: "number" } } },
    handler: (args) => args,
  };
  const runtime = await createTenantRuntime(
    { name: "bench-loop", scripts: [{ path: script }], model: { kind: "scripted", file: model } },
    pool,
    { host: { tools: [echo] } },
  );
  const oneRound = async () => {
    const results = await Promise.all(
      Array.from({ length: concurrentRuns }, (_, i) =>
        runtime.start({ sessionId: `bench-${i}`, prompt: "go", options: { maxParallelTools: 4 } }).wait(),
      ),
    );
    for (const r of results) if (r.status !== "completed") throw new Error(`bench run ${r.status}: ${r.reason}`);
  };
  /** One round, its calls/s and the host's CPU a call given to `onRound` (scripts/bench/loop-floor.mjs --curve). */
  const timedRound = async (index) => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    await oneRound();
    const used = process.cpuUsage(cpu);
    const calls = concurrentRuns * iterations * callsPerIteration;
    onRound({ index, callsPerSecond: calls / ((performance.now() - started) / 1000), hostCpuUsPerCall: (used.user + used.system) / calls });
  };
  try {
    for (let i = 0; i < warmUpRounds; i++) await timedRound(i); // workers, isolates, bundles, then V8's compiling
    const measuring = onMeasure.start();
    const started = performance.now();
    for (let i = 0; i < rounds; i++) await timedRound(warmUpRounds + i);
    const seconds = (performance.now() - started) / 1000;
    onMeasure.end(measuring);
    return (rounds * concurrentRuns * iterations * callsPerIteration) / seconds;
  } finally {
    await pool.close();
  }
}
