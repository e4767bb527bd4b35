import { describe, expect, it } from "vitest";
import type { SupervisedSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxLimits } from "../../src/sandbox/api.js";
import { beforePayload, poolsClosedAfterEach, rejection, script } from "./helpers.js";

/*
 * A shared worker keeps one isolate made ahead for the next tenant that needs one (src/sandbox/worker/
 * isolate-reserve.ts, docs/sandbox.md "Tenants apart"). It is made with the memory limit of the last isolate
 * asked for; a tenant with another limit still gets its own limit.
 */

const newPool = poolsClosedAfterEach();

// About 48 MB of doubles: over a 16 MB isolate's limit, well within 128 MB.
const allocating = script(
  "allocating",
  `import { defineScript } from "hookbox";
export default defineScript({
  hooks: { beforeToolCall() { const held = new Array(6e6).fill(1.5); return { action: "proceed", args: { length: held.length } }; } },
});`,
);

async function callOnce(pool: SupervisedSandboxPool, name: string, limits: Partial<SandboxLimits>): Promise<unknown> {
  const sandbox = pool.tenant(name, { cpuMs: 5000, wallMs: 10_000, ...limits });
  const run = await sandbox.openRun({ runId: `run-${name}`, scripts: await sandbox.load([allocating]) });
  try {
    return await run.callHook("allocating", "beforeToolCall", beforePayload());
  } finally {
    await run.close();
  }
}

describe("the isolate a shared worker makes ahead", () => {
  it("goes to a tenant only with the tenant's own memory limit", async () => {
    const pool = newPool({ workers: 1 });
    // Two tenants make the worker a shared one; each takes a new isolate and the worker reserves one of 128 MB.
    expect(await callOnce(pool, "large-1", { memoryMb: 128 })).toMatchObject({ args: { length: 6e6 } });
    expect(await callOnce(pool, "large-2", { memoryMb: 128 })).toMatchObject({ args: { length: 6e6 } });
    // The reserve is refilled once the worker is idle: give it that moment, so the next tenant finds one.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const refused = await rejection(callOnce(pool, "small", { memoryMb: 16 }));
    expect(refused.code).toBe("SANDBOX_MEMORY");
    expect(refused.message).toContain("memory limit of 16 MB");
    // And the worker goes on serving tenants of the larger limit.
    expect(await callOnce(pool, "large-3", { memoryMb: 128 })).toMatchObject({ args: { length: 6e6 } });
  });
});
