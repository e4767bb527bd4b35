import { afterAll, beforeAll, expect, it } from "vitest";
import { harness, ofType, writeScripts } from "../helpers/harness.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import { MemoryKv } from "../../src/store/memory-kv.js";

/*
 * Shadow scripts decide nothing and get no capabilities (docs/capabilities.md): a shadow's ctx.kv, ctx.fetch and
 * ctx.model calls are CAPABILITY_DENIED, so it never writes the tenant's kv, spends the run's fetch count or
 * calls the guard model. The active script of the same deployment, with the same code, is granted kv.
 */

let pool: SandboxPool;
beforeAll(() => {
  pool = createSandboxPool({ workers: 1 });
});
afterAll(async () => pool.close());

/** Writes to kv, then reports what each capability answered as its decision's reason. */
const prober = (name: string) => `import { defineScript } from "hookbox";
export default defineScript({ name: "${name}", hooks: {
  async beforeToolCall(p) {
    const outcome = async (work) => { try { await work(); return "ok"; } catch (error) { return error.code; } };
    const kv = await outcome(() => p.kv.set("written-by-${name}", true));
    const fetch = await outcome(() => p.fetch("https://api.partner.test/v1/x"));
    const model = await outcome(() => p.model.generate({ prompt: "ok?" }));
    return { action: "deny", reason: "kv " + kv + ", fetch " + fetch + ", model " + model };
  },
} });
`;

it("a shadow script's capability calls are all CAPABILITY_DENIED; the active script's kv write goes through", async () => {
  const kv = new MemoryKv();
  const [active, shadow] = writeScripts({ "active.ts": prober("active"), "shadow.ts": prober("shadow") });
  const tenant = `t-${Math.random().toString(36).slice(2)}`;
  const h = await harness({
    steps: [{ toolCalls: [{ id: "c1", name: "t", args: {} }] }, { text: "done" }],
    host: { tools: [{ name: "t", description: "", parameters: { type: "object" }, handler: () => null }] },
    scripts: [active!],
    pool,
    tenant,
    extras: {
      kv,
      deployment: {
        record: { id: "dep_1", scripts: [], shadow: [] },
        sandboxTenant: tenant,
        versions: [1],
        shadow: { sources: [shadow!], versions: [2], sandboxTenant: `${tenant}~shadow` },
      },
    },
  });
  const { events } = await h.run();
  const reasons = Object.fromEntries(ofType(events, "hook-decision").map((d) => [d.shadow ? "shadow" : "active", d.decision.reason]));
  expect(reasons).toEqual({
    // The active script has kv (granted by default), but no egress list and no guard model.
    active: "kv ok, fetch CAPABILITY_DENIED, model CAPABILITY_DENIED",
    shadow: "kv CAPABILITY_DENIED, fetch CAPABILITY_DENIED, model CAPABILITY_DENIED",
  });
  expect(await kv.get(tenant, "written-by-active", Date.now())).toBe("true");
  expect(await kv.get(tenant, "written-by-shadow", Date.now())).toBeUndefined();
}, 30_000);
