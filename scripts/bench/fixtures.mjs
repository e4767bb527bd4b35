// Shared by the scripts in scripts/bench/: the bench's small hook payload, its 100 KB result, a script writer and
// percentiles. The same shapes as scripts/bench.mjs uses, so figures compare.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";

const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-"));

/** Writes a script file and returns its ScriptSource. */
export function script(name, source) {
  const path = join(dir, `${name}.ts`);
  writeFileSync(path, source);
  return { path };
}

export const smallPayload = {
  phase: "beforeToolCall",
  call: { id: "call-1", name: "lookup_order", args: { id: "A17" }, origin: "script" },
  attempt: 1,
  sessionId: "s1",
  inferenceId: "i1",
  traceId: "t1",
  turnId: "u1",
  timestampMs: 1700000000000,
  tags: { env: "bench" },
  userContext: { originalUserRequest: "Please refund order A17", timestampMs: 1700000000000 },
};

const bigResult = {
  items: Array.from({ length: 800 }, (_, i) => ({
    id: `item-${i}`,
    name: `Product number ${i}`,
    price: i * 1.5,
    tags: ["a", "b"],
    note: "x".repeat(40),
  })),
};
export const echoPayload = { ...smallPayload, phase: "afterToolCall", result: bigResult, durationMs: 3 };

export const HOOK_BODY = `if (p.call.name === "refund" && p.call.args.amount > 100) return { action: "deny", reason: "over limit" }; return { action: "proceed" };`;

/**
 * Mass-tenant benches run thousands of loads; on an overloaded machine a worker descheduled for longer than a
 * tenant's 200 ms limit fails one (SANDBOX_TIMEOUT, docs/sandbox.md "Known limits"). Such a tenant is counted
 * (the bench reports `mass_tenant_failures`) instead of ending the whole bench.
 */
export const massFailures = { count: 0 };
export function countFailure(error) {
  massFailures.count++;
  process.stderr.write(`a mass-bench tenant failed: ${error.code ?? ""} ${String(error.message).slice(0, 200)}\n`);
}

export const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
export const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

export async function timeCalls(count, call) {
  const samples = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await call(i);
    samples.push(performance.now() - started);
  }
  return samples;
}

/**
 * The start-up benches' tenant (serve-startup.mjs, tenant-first-run.mjs): `policy.ts`, a script with one tool and a
 * `beforeToolCall`, and `model.json`, a scripted model that calls the tool once, then answers. Written into `dir`.
 */
export function writeStartupTenantFiles(dir) {
  writeFileSync(
    join(dir, "policy.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({
  tools: [{ name: "lookup", description: "look up", parameters: { type: "object" }, handler: (args) => ({ ok: true }) }],
  hooks: { beforeToolCall() {} },
});
`,
  );
  writeFileSync(
    join(dir, "model.json"),
    JSON.stringify({ steps: [{ toolCalls: [{ id: "c1", name: "lookup", args: {} }] }, { text: "done" }] }),
  );
}

/** The loop bench's policy (loop-throughput.mjs) in the bundler's factory shape (it gets the "hookbox" module). */
export const LOOP_POLICY_FACTORY = `(function (hookbox) { return { default: hookbox.defineScript({ name: "bench-policy", hooks: {
  beforeToolCall(p) { return p.call.args.n >= 0 ? { action: "proceed" } : { action: "deny", reason: "negative" }; },
  afterToolCall(p) { return { result: { ...p.result, checked: true } }; },
} }) }; })`;

/**
 * The loop bench's hook payloads (loop-throughput.mjs), with the fields the host sends: `phase` "beforeToolCall"
 * or "afterToolCall", each as the JSON text of the hook's argument list.
 */
export function loopHookArgs(phase) {
  const fields = {
    sessionId: "bench-0",
    inferenceId: "inf_01a214e010cb45920c6f9a896084fe01",
    traceId: "eec994e17bd58afc977141f59d1de0b3",
    turnId: "turn_01a214e010cb35e97594205ef23210a1",
    timestampMs: 1795646558423,
    tags: {},
    userContext: { originalUserRequest: "go", timestampMs: 1795646558411 },
    budget: { iteration: 1, maxIterations: 20, tokensUsed: 0, costUsd: 0, retriesLeft: 20 },
    phase,
    call: { id: "c0_3", name: "echo", args: { n: 3 }, origin: "host" },
    attempt: 1,
  };
  return JSON.stringify([phase === "afterToolCall" ? { ...fields, durationMs: 1, result: { n: 3 } } : fields]);
}

/** dist/runtime.js wrapped as the worker runs it in a fresh context: the script's value is the runtime's install. */
export function isolateRuntimeSource(dist) {
  return `(function () { "use strict";\n${readFileSync(join(dist, "runtime.js"), "utf8")}\nreturn __hookboxBootstrap.install; })()`;
}

/** The runtime limits the bench scripts install the runtime with (a worker's defaults). */
export const BENCH_RUNTIME_LIMITS = JSON.stringify({ maxPayloadBytes: 8 * 1048576, maxLogChars: 8192 });

/** A TypeScript module of src/ (`path`), bundled on the fly as the build would, and imported. */
export async function importSource(path) {
  const bundled = await build({ entryPoints: [path], bundle: true, write: false, format: "esm", platform: "node", logLevel: "error" });
  return import(`data:text/javascript;base64,${Buffer.from(bundled.outputFiles[0].text).toString("base64")}`);
}
