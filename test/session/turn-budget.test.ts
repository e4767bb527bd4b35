import { describe, expect, it } from "vitest";
import { openMemoryStore } from "../../src/store/open.js";
import { SessionManager } from "../../src/session/manager.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { TenantConfig } from "../../src/host/types.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import { writeSteps } from "../helpers/harness.js";

/*
 * maxTurnBytes bounds what one run adds to its turn, not the session's history: a session whose history is far
 * past the budget keeps running, and a single run that adds more than the budget still fails RUN_BUDGET.
 */

const noPool: SandboxPool = {
  tenant() {
    throw new Error("no sandbox in this test");
  },
  async close() {},
};

const lookup = {
  name: "lookup",
  description: "returns a 500-character record",
  parameters: { type: "object" },
  handler: () => ({ record: "r".repeat(500) }),
};

async function session(steps: object[], maxTurnBytes: number) {
  const config: TenantConfig = {
    name: "acme",
    scripts: [],
    model: { kind: "scripted", file: writeSteps(steps as never) },
    budgets: { maxTurnBytes },
    // A context budget wider than any history here: this test is about the turn budget alone.
    runDefaults: { context: { maxBytes: 100_000_000 } },
  };
  const runtime = await createTenantRuntime(config, noPool, { host: { tools: [lookup] } });
  const store = openMemoryStore();
  const manager = new SessionManager({ store, runtimeFor: async () => runtime });
  return { store, manager, session: await manager.create({ tenant: "acme", tenantConfig: config }) };
}

describe("the turn budget applies to what a run adds", () => {
  it("a session whose history is many times maxTurnBytes keeps completing runs", async () => {
    const {
      store,
      manager,
      session: s,
    } = await session([{ toolCalls: [{ id: "c1", name: "lookup", args: {} }] }, { text: "found it" }], 8_000);
    for (let run = 1; run <= 40; run++) {
      const result = await (await s.run(`question ${run}`)).wait();
      expect(result, `run ${run}`).toMatchObject({ status: "completed" });
    }
    const history = await manager.history(s.id);
    // Forty runs of about 1,400 bytes each: several times the budget, and every run completed.
    expect(JSON.stringify(history).length).toBeGreaterThan(5 * 8_000);
    await store.close();
  });

  it("one run that adds more than maxTurnBytes fails RUN_BUDGET, naming what the run added", async () => {
    const calls = Array.from({ length: 12 }, (_, i) => ({ id: `c${i}`, name: "lookup", args: {} }));
    const { store, session: s } = await session([{ toolCalls: calls }, { text: "never" }], 4_000);
    const result = await (await s.run("look up everything")).wait();
    expect(result).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
    expect(result.reason).toMatch(/^the run added \d+ bytes to its turn, over the turn budget of 4000$/);
    await store.close();
  });
});
