// replay_calls_per_s: `replay` (src/policy/replay.ts) over 10,000 recorded beforeToolCall payloads in a
// SQLite store (100 runs of 100 calls), re-evaluated by a small policy in the sandbox. Goal: 10,000 in < 10 s.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const POLICY = `
import { defineScript } from "hookbox";
export default defineScript({
  name: "bench-replay",
  hooks: {
    beforeToolCall(p) { return p.call.args.amount > 50 ? { action: "deny", reason: "over 50" } : undefined; },
  },
});`;

export async function measureReplayCallsPerSecond({ dist, runs = 100, callsPerRun = 100 }) {
  const { createSandboxPool, openStore, replay, loadReplayScripts } = await import(join(dist, "index.js"));
  const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-replay-"));
  const script = join(dir, "policy.ts");
  writeFileSync(script, POLICY);
  const store = openStore(join(dir, "store.db"));
  const now = Date.now();
  for (let r = 0; r < runs; r++) {
    const sessionId = `s${r}`;
    const runId = `r${r}`;
    await store.createSession({ id: sessionId, tenant: "bench", tenantConfig: {}, defaults: {}, createdMs: now });
    await store.createRun({
      id: runId,
      sessionId,
      inferenceId: "i",
      prompt: "p",
      options: {},
      status: "completed",
      iterations: 1,
      startedMs: now + r,
      lastSeq: 0,
    });
    for (let c = 0; c < callsPerRun; c++) {
      const call = { id: `c${c}`, name: "refund", args: { id: `o${c}`, amount: c }, origin: "host" };
      const payload = {
        phase: "beforeToolCall",
        call,
        attempt: 1,
        sessionId,
        inferenceId: "i",
        traceId: "t",
        turnId: "u",
        timestampMs: now,
        tags: {},
      };
      await store.recordHookCall({
        runId,
        callId: call.id,
        hook: "beforeToolCall",
        attempt: 1,
        shadow: false,
        verdict: "proceed",
        decision: { action: "none" },
        payload,
      });
    }
  }
  const pool = createSandboxPool();
  try {
    const scripts = await loadReplayScripts(pool, "bench-replay", [{ path: script }]);
    const started = performance.now();
    const summary = await replay({ store, filter: { tenant: "bench" }, scripts });
    const seconds = (performance.now() - started) / 1000;
    if (summary.calls !== runs * callsPerRun) throw new Error(`replayed ${summary.calls} calls, expected ${runs * callsPerRun}`);
    if (summary.changed["proceed->deny"] !== runs * (callsPerRun - 51))
      throw new Error(`unexpected changes ${JSON.stringify(summary.changed)}`);
    return { callsPerSecond: summary.calls / seconds, seconds, calls: summary.calls };
  } finally {
    await pool.close();
    await store.close();
  }
}
