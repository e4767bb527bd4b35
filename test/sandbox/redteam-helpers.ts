import { afterAll, beforeAll, expect } from "vitest";
import { createSandboxPool, type SandboxPoolOptions, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxLimits, SandboxRun } from "../../src/sandbox/api.js";
import { beforePayload, rejection, script } from "./helpers.js";
import { wallMissing } from "../helpers/wall.js";

export const attackLimits: Partial<SandboxLimits> = { cpuMs: 100, wallMs: 1000, memoryMb: 32 };

let counter = 0;

/** Loads `hooks` source (the object literal body of defineScript) in a fresh tenant and opens a run. */
export async function attacker(
  pool: SupervisedSandboxPool,
  body: string,
  limits = attackLimits,
): Promise<{ run: SandboxRun; tenant: string }> {
  const tenant = `attacker-${++counter}`;
  const sandbox = pool.tenant(tenant, limits);
  const manifests = await sandbox.load([
    script("attack", `import { defineScript } from "hookbox";\nexport default defineScript(${body});`),
  ]);
  return { run: await sandbox.openRun({ runId: `run-${tenant}`, scripts: manifests }), tenant };
}

/** A well-behaved tenant; `served()` asserts it answers promptly and correctly. */
export async function victim(pool: SupervisedSandboxPool) {
  const sandbox = pool.tenant("victim");
  const manifests = await sandbox.load([
    script("victim", `export default { hooks: { beforeToolCall(p) { return { action: "proceed", args: { echoed: p.call.name } }; } } };`),
  ]);
  const run = await sandbox.openRun({ runId: "victim-run", scripts: manifests });
  return {
    async served(boundMs = 1000): Promise<number> {
      const started = performance.now();
      const decision = await run.callHook("victim", "beforeToolCall", beforePayload("ping"));
      const elapsed = performance.now() - started;
      expect(decision).toEqual({ action: "proceed", args: { echoed: "ping" } });
      expect(elapsed).toBeLessThan(boundMs);
      return elapsed;
    },
  };
}

/** Time a rejection; returns its code, message and elapsed ms. */
export async function timedRejection(
  promise: Promise<unknown>,
): Promise<{ code: string; message: string; details: Record<string, unknown>; ms: number }> {
  const started = performance.now();
  const error = await rejection(promise);
  return { ...error, ms: performance.now() - started };
}

/** Nothing a script did reached the host realm. */
export function assertHostIntact(): void {
  expect(Object.prototype).not.toHaveProperty("polluted");
  expect(JSON.stringify({ a: 1 })).toBe('{"a":1}');
  expect([1, 2].map((x) => x * 2)).toEqual([2, 4]);
  expect((globalThis as Record<string, unknown>).escaped).toBeUndefined();
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
    assertHostIntact();
    await pool.close();
  });
  return { pool, good: { served: (boundMs) => good!.served(boundMs) } };
}
