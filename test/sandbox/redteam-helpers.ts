import { afterAll, beforeAll, expect } from "vitest";
import { createSandboxPool, type SandboxPoolOptions, type SupervisedSandboxPool, type WorkerInfo } from "../../src/sandbox/index.js";
import type { SandboxLimits, SandboxRun, ScriptManifest } from "../../src/sandbox/api.js";
import { beforePayload, rejection, script, toolCtx } from "./helpers.js";
import { wallMissing } from "../helpers/wall.js";
import { waitUntil, waitUntilBusy } from "../server/processes.js";

export const attackLimits: Partial<SandboxLimits> = { cpuMs: 100, wallMs: 1000, memoryMb: 32 };

let counter = 0;

/** Loads `hooks` source (the object literal body of defineScript) in a fresh tenant and opens a run. */
export async function attacker(
  pool: SupervisedSandboxPool,
  body: string,
  limits = attackLimits,
): Promise<{ run: SandboxRun; tenant: string; manifests: ScriptManifest[] }> {
  const tenant = `attacker-${++counter}`;
  // Loaded under the default limits (the attacks are in the hooks, not at load, and a loaded machine can take
  // more than a tight CPU limit to evaluate a bundle); the attack limits apply from the first call on.
  const sandbox = pool.tenant(tenant);
  const manifests = await sandbox.load([
    script("attack", `import { defineScript } from "hookbox";\nexport default defineScript(${body});`),
  ]);
  pool.tenant(tenant, limits);
  return { run: await sandbox.openRun({ runId: `run-${tenant}`, scripts: manifests }), tenant, manifests };
}

/**
 * How long a well-behaved tenant's call may take while others attack, in a test: generous, so a heavily loaded
 * machine cannot make a false red; it still fails a victim left waiting for good. The latency goal itself is
 * measured by `npm run bench` (`victim_hook_p99_ms_under_attack`).
 */
export const SERVED_MS = 10_000;

/** A well-behaved tenant; `served()` asserts it answers correctly, within `boundMs`. */
export async function victim(pool: SupervisedSandboxPool) {
  const sandbox = pool.tenant("victim");
  const manifests = await sandbox.load([
    script("victim", `export default { hooks: { beforeToolCall(p) { return { action: "proceed", args: { echoed: p.call.name } }; } } };`),
  ]);
  const run = await sandbox.openRun({ runId: "victim-run", scripts: manifests });
  return {
    async served(boundMs = SERVED_MS): Promise<number> {
      const started = performance.now();
      const decision = await run.callHook("victim", "beforeToolCall", beforePayload("ping"));
      const elapsed = performance.now() - started;
      expect(decision).toEqual({ action: "proceed", args: { echoed: "ping" } });
      expect(elapsed).toBeLessThan(boundMs);
      return elapsed;
    },
  };
}

/** The worker running `tenant`'s code, once it is burning CPU there (the call in flight is running, not queued). */
export async function spinningWorkerOf(pool: SupervisedSandboxPool, tenant: string): Promise<WorkerInfo> {
  let worker: WorkerInfo | undefined;
  await waitUntil(
    () => (worker = pool.workers().find((info) => info.tenants.includes(tenant))) !== undefined,
    20_000,
    `${tenant}'s worker`,
  );
  await waitUntilBusy(worker!.pid!);
  return worker!;
}

/** Time a rejection; returns its code, message and elapsed ms. */
export async function timedRejection(
  promise: Promise<unknown>,
): Promise<{ code: string; message: string; details: Record<string, unknown>; ms: number }> {
  const started = performance.now();
  const error = await rejection(promise);
  return { ...error, ms: performance.now() - started };
}

const PROBE = `export default { tools: [{ name: "probe", description: "", handler() {
  return { polluted: ({}).polluted ?? null, stringify: JSON.stringify({ a: 1 }), map: [1, 2].map((x) => x * 2),
    escaped: globalThis.escaped ?? null, shared: globalThis.shared ?? null, process: typeof process };
} }] };`;

/**
 * Nothing a script did outlived its run where scripts execute: in the worker processes. Every worker the pool
 * lists is alive, and a probe script in a new run of `tenant` (the same isolate the attack ran in, when given)
 * sees pristine built-ins and no globals left behind.
 */
export async function assertWorkerIntact(pool: SupervisedSandboxPool, tenant = "probe"): Promise<void> {
  const workers = pool.workers();
  expect(workers.length).toBeGreaterThan(0);
  for (const { pid } of workers) if (pid !== undefined) expect(() => process.kill(pid, 0)).not.toThrow();
  const sandbox = pool.tenant(tenant);
  const manifests = await sandbox.load([script("probe", PROBE)]);
  const run = await sandbox.openRun({ runId: `probe-${++counter}`, scripts: manifests });
  expect(await run.callTool("probe", "probe", {}, toolCtx)).toEqual({
    polluted: null,
    stringify: '{"a":1}',
    map: [2, 4],
    escaped: null,
    shared: null,
    process: "undefined",
  });
  await run.close();
}

/**
 * The pool of one red-team file and its well-behaved tenant, set up before the file's cases; after them, it
 * checks that nothing a script did reached the host realm, then closes the pool.
 */
export function redTeamPool(options: SandboxPoolOptions): {
  pool: SupervisedSandboxPool;
  good: { served(boundMs?: number): Promise<number> };
} {
  const pool = createSandboxPool(options);
  let good: Awaited<ReturnType<typeof victim>> | undefined;
  beforeAll(async () => {
    // Every attack here runs against walled workers (sandbox.wall auto, bubblewrap installed).
    expect(pool.wall, wallMissing("the red-team pool fell back to no wall")).toBe("bubblewrap");
    good = await victim(pool);
  });
  afterAll(async () => {
    await assertWorkerIntact(pool);
    await pool.close();
  });
  return { pool, good: { served: (boundMs) => good!.served(boundMs) } };
}
