import { afterAll, describe, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import type { TenantSandbox } from "../../src/sandbox/api.js";
import { createTenantRuntime, tenantSandboxOptions } from "../../src/host/tenant-runtime.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforePayload, script, scriptDir } from "./helpers.js";

/*
 * A tenant's sandboxes other than its own (a deployment's, a shadow's, a replay's, an upload check's) share the
 * tenant's standing: once any of them breaks a limit, all of them run on the quarantine worker, and a fresh one
 * starts there. A fresh sandbox name is no way back onto a shared worker.
 */
// A wide grace: the in-isolate CPU limit, not the supervisor, ends the spin even on a loaded machine.
const pool = createSandboxPool({ workers: 1, killGraceMs: 3000 });
afterAll(() => pool.close());

// Wide enough that loading the script never times out on a loaded machine; the spin still ends at 500 ms.
const limits = { cpuMs: 500, wallMs: 2000, memoryMb: 32 };
const policy = script(
  "policy",
  `export default { name: "policy", hooks: { beforeToolCall(p) { if (p.call.name === "spin") while (true) {} return { action: "deny", reason: "calm" }; } } };`,
);

/** Calls the policy's hook in `sandbox`; resolves with the error code, or "ok". */
async function call(sandbox: TenantSandbox, name: string): Promise<string> {
  const run = await sandbox.openRun({ runId: `r-${name}-${Math.random()}`, scripts: await sandbox.load([policy]) });
  try {
    await run.callHook("policy", "beforeToolCall", beforePayload(name));
    return "ok";
  } catch (error) {
    return (error as { code: string }).code;
  } finally {
    await run.close();
  }
}

const roleOf = (sandbox: string) => pool.workers().find((worker) => worker.tenants.includes(sandbox))?.role;

describe("sandboxes a tenant owns share its standing", () => {
  it("a breach in the tenant's own sandbox quarantines a replay sandbox it opens later", async () => {
    expect(await call(pool.tenant("acme", limits), "spin")).toBe("SANDBOX_TIMEOUT");
    const replay = pool.tenant("acme~replay~1", limits, { owner: "acme" });
    expect(await call(replay, "calm")).toBe("ok");
    expect(roleOf("acme~replay~1")).toBe("quarantine");
    pool.drop?.("acme~replay~1");
    // Dropping the replay's sandbox leaves the owner's standing as it was.
    const next = pool.tenant("acme~replay~2", limits, { owner: "acme" });
    expect(await call(next, "calm")).toBe("ok");
    expect(roleOf("acme~replay~2")).toBe("quarantine");
  });

  it("a breach in a sandbox the tenant owns quarantines the tenant's own sandbox, and its other ones", async () => {
    const own = pool.tenant("globex", limits);
    expect(await call(own, "calm")).toBe("ok");
    expect(roleOf("globex")).toBe("normal");
    expect(await call(pool.tenant("globex~check~1", limits, { owner: "globex" }), "spin")).toBe("SANDBOX_TIMEOUT");
    expect(await call(own, "calm")).toBe("ok");
    expect(roleOf("globex")).toBe("quarantine");
  });

  it("a deployment's sandbox (built by the tenant runtime) is the tenant's; a shadow's keeps its own standing; all keep its cordon", async () => {
    const record = { id: "dep_1", scripts: [], shadow: [] };
    const model = join(scriptDir, "model.json");
    writeFileSync(model, JSON.stringify({ steps: [{ text: "unused" }] }));
    const config = { name: "umbrella", scripts: [policy], model: { kind: "scripted" as const, file: model }, limits, cordon: "paid" };
    await createTenantRuntime(config, pool, {
      deployment: {
        record,
        sandboxTenant: "umbrella~dep_1",
        versions: [1],
        shadow: { sources: [policy], versions: [1], sandboxTenant: "umbrella~dep_1~shadow" },
      },
    });
    expect(await call(pool.tenant("umbrella~dep_1~shadow"), "spin")).toBe("SANDBOX_TIMEOUT");
    expect(await call(pool.tenant("umbrella~dep_1"), "calm")).toBe("ok");
    expect(roleOf("umbrella~dep_1")).toBe("normal");
    expect(await call(pool.tenant("umbrella~dep_1"), "spin")).toBe("SANDBOX_TIMEOUT");
    // A replay's sandbox as the server opens it: the tenant's standing, and its cordon.
    expect(await call(pool.tenant("umbrella~replay~1", limits, tenantSandboxOptions(config)), "calm")).toBe("ok");
    expect(roleOf("umbrella~replay~1")).toBe("quarantine");
    expect(pool.workers().find((worker) => worker.tenants.includes("umbrella~replay~1"))?.cordon).toBe("paid");
  });

  it("another tenant's sandboxes keep their own standing", async () => {
    const other = pool.tenant("initech~replay~1", limits, { owner: "initech" });
    expect(await call(other, "calm")).toBe("ok");
    expect(roleOf("initech~replay~1")).toBe("normal");
  });
});
