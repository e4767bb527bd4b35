import { expect, it } from "vitest";
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { openMemoryStore } from "../../src/store/open.js";
import { SessionManager } from "../../src/session/manager.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { TenantConfig } from "../../src/host/types.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import { ScriptedModel, type ScriptedStep } from "../../src/engine/scripted.js";
import { writeSteps } from "../helpers/harness.js";

/*
 * A session never dies of its own length: 10,000 runs of one session (a tool call and an answer each) all
 * complete, and no model call is sent more than the context budget, however long the history grows.
 */

const noPool: SandboxPool = {
  tenant() {
    throw new Error("no sandbox in this test");
  },
  async close() {},
};

const STEPS: ScriptedStep[] = [{ toolCalls: [{ id: "c1", name: "lookup", args: { id: "A17" } }] }, { text: "Order A17 totals 120." }];
const BUDGET = 8_000;
const RUNS = 10_000;

it(`a session of ${RUNS} runs completes every run, each model call within the context budget`, async () => {
  let largest = 0;
  let calls = 0;
  const model = () => {
    const scripted = new ScriptedModel(STEPS, "scripted", { keepCalls: 0 });
    const generate = scripted.doGenerate.bind(scripted);
    scripted.doGenerate = (options: LanguageModelV4CallOptions) => {
      calls++;
      largest = Math.max(largest, JSON.stringify(options.prompt).length);
      return generate(options);
    };
    return scripted;
  };
  const config: TenantConfig = {
    name: "acme",
    scripts: [],
    model: { kind: "scripted", file: writeSteps(STEPS) },
    runDefaults: { context: { maxBytes: BUDGET } },
    // Far below what 10,000 runs add up to: the turn budget is what one run adds.
    budgets: { maxTurnBytes: 64 * 1024 },
  };
  const lookup = { name: "lookup", description: "an order", parameters: { type: "object" }, handler: () => ({ id: "A17", total: 120 }) };
  const runtime = await createTenantRuntime(config, noPool, { host: { tools: [lookup] }, model });
  const store = openMemoryStore();
  const manager = new SessionManager({ store, runtimeFor: async () => runtime });
  const session = await manager.create({ tenant: "acme", tenantConfig: config });
  for (let run = 1; run <= RUNS; run++) {
    const result = await (await session.run(`question ${run}`)).wait();
    if (result.status !== "completed") expect.fail(`run ${run} ended ${result.status}: ${result.reason}`);
  }
  expect(calls).toBe(2 * RUNS);
  expect(largest).toBeLessThanOrEqual(BUDGET);
  const history = await manager.history(session.id);
  expect(JSON.stringify(history).length).toBeLessThanOrEqual(BUDGET);
  expect(history!.blocks[0].payload).toMatchObject({ restart_type: "trimmed" });
  expect(Number(history!.blocks[0].payload.dropped_messages)).toBeGreaterThan(RUNS);
  await store.close();
}, 600_000);
