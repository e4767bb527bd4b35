import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harness, ofType, writeScripts } from "../helpers/harness.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import type { Budget } from "../../src/contracts/context.js";
import { PayloadKeys } from "../../src/turns/keys.gen.js";

let pool: SandboxPool;
beforeAll(() => {
  pool = createSandboxPool();
});
afterAll(async () => pool.close());

/** A host tool that fails its first attempt and records the ctx.budget of every attempt. */
function flaky(budgets: Budget[]): HostTool {
  return {
    name: "flaky",
    description: "fails once",
    parameters: { type: "object" },
    handler: (_args, ctx) => {
      budgets.push(ctx.budget);
      if (budgets.length === 1) throw new Error("first attempt fails");
      return { ok: true };
    },
  };
}

// Every ctx the script sees is logged as `<where> <budget JSON>`; its tool returns its ctx.budget.
const budgetScript = `
import { defineScript } from "hookbox";
export default defineScript({
  middleware: [async function logBudget(turn, next, ctx) { console.log("middleware " + JSON.stringify(ctx.budget)); return await next(turn); }],
  tools: [{ name: "peek", description: "shows its budget", parameters: { type: "object" }, async handler(_args, ctx) { return ctx.budget; } }],
  hooks: {
    beforeToolCall: (p) => { console.log("beforeToolCall:" + p.call.id + " " + JSON.stringify(p.budget)); },
    onToolError: (p) => ({ action: "retry", backoffMs: 1 }),
    afterToolCall: (p) => { console.log("afterToolCall:" + p.call.id + " " + JSON.stringify(p.budget)); },
  },
});`;

/** USD per million tokens: large, so each inference's cost is a readable number. */
const pricing = { scripted: { inputPerMTok: 1000, outputPerMTok: 2000 } };

describe("usage and budgets", () => {
  it("usage is in inference-finished and run-finished, and ctx.budget is right in every ctx and payload", async () => {
    const hostBudgets: Budget[] = [];
    const deadlineMs = Date.now() + 120_000;
    const h = await harness({
      steps: [
        { toolCalls: [{ id: "c1", name: "flaky", args: {} }], usage: { inputTokens: 100, outputTokens: 20 } },
        { toolCalls: [{ id: "c2", name: "peek", args: {} }], usage: { inputTokens: 50, outputTokens: 10 } },
        { text: "done", usage: { inputTokens: 10, outputTokens: 5 } },
      ],
      host: { tools: [flaky(hostBudgets)] },
      scripts: writeScripts({ "budget.ts": budgetScript }),
      pool,
      tenant: `budget-${Math.random().toString(36).slice(2)}`,
      extras: { pricing },
    });
    const { result, events } = await h.run("x", { maxTokens: 10_000, maxCostUsd: 5, deadlineMs });
    expect(result.status, result.reason).toBe("completed");

    // inference 1 costs 100*1000/1e6 + 20*2000/1e6 = 0.14; inference 2: 0.05 + 0.02; inference 3: 0.01 + 0.01.
    const finished = ofType(events, "inference-finished").map((e) => e.usage);
    expect(finished.map((u) => [u?.inputTokens, u?.outputTokens])).toEqual([
      [100, 20],
      [50, 10],
      [10, 5],
    ]);
    expect(finished.map((u) => u?.costUsd)).toEqual([expect.closeTo(0.14, 9), expect.closeTo(0.07, 9), expect.closeTo(0.02, 9)]);
    const runUsage = ofType(events, "run-finished")[0].usage!;
    expect(runUsage).toMatchObject({ inputTokens: 160, outputTokens: 35 });
    expect(runUsage.costUsd).toBeCloseTo(0.23, 9);
    expect(runUsage.sandboxCpuMs).toBeGreaterThan(0);

    const limits = { maxIterations: 20, maxTokens: 10_000, maxCostUsd: 5, deadlineMs };
    const logged = (prefix: string) =>
      ofType(events, "log")
        .filter((l) => l.message.startsWith(`${prefix} `))
        .map((l) => JSON.parse(l.message.slice(prefix.length + 1)) as Budget);
    const [mw1, mw2, mw3] = logged("middleware");
    expect(mw1).toEqual({ ...limits, iteration: 1, tokensUsed: 0, costUsd: 0, retriesLeft: 20 });
    expect(mw2).toMatchObject({ iteration: 2, tokensUsed: 120, retriesLeft: 19 });
    expect(mw2.costUsd).toBeCloseTo(0.14, 9);
    expect(mw3).toMatchObject({ iteration: 3, tokensUsed: 180 });
    expect(mw3.costUsd).toBeCloseTo(0.21, 9);

    // Hook payloads: before the first call nothing is retried yet; after it, the one retry is spent.
    const [before1] = logged("beforeToolCall:c1");
    expect(before1).toMatchObject({ ...limits, iteration: 1, tokensUsed: 120, retriesLeft: 20 });
    expect(before1.costUsd).toBeCloseTo(0.14, 9);
    expect(logged("afterToolCall:c1")[0]).toMatchObject({ iteration: 1, tokensUsed: 120, retriesLeft: 19 });

    // Host tool ctx, attempt by attempt.
    expect(hostBudgets.map((b) => [b.iteration, b.tokensUsed, b.retriesLeft])).toEqual([
      [1, 120, 20],
      [1, 120, 19],
    ]);
    // Script tool ctx (inside the sandbox), in the second inference's tool phase.
    const peek = result.turn.blocks.find((b) => b.kind === "tool_use" && b.payload[PayloadKeys.id] === "c2")!.payload[
      PayloadKeys.result
    ] as unknown as Budget;
    expect(peek).toMatchObject({ ...limits, iteration: 2, tokensUsed: 180, retriesLeft: 19 });
    expect(peek.costUsd).toBeCloseTo(0.21, 9);
  });

  it("an inference that takes the run past maxTokens ends it failed with BUDGET, and its tool calls do not run", async () => {
    const budgets: Budget[] = [];
    const call = (id: string) => ({ toolCalls: [{ id, name: "flaky", args: {} }], usage: { inputTokens: 500, outputTokens: 100 } });
    const h = await harness({ steps: [call("a"), call("b"), { text: "never" }], host: { tools: [flaky(budgets)] } });
    const { result, events } = await h.run("x", { maxTokens: 1000, errorPolicy: "continue" });
    expect(result).toMatchObject({ status: "failed", errorCode: "BUDGET", iterations: 2 });
    expect(result.reason).toContain("1200 tokens");
    expect(result.reason).toContain("maxTokens (1000)");
    expect(budgets).toHaveLength(1); // "a" ran (and failed); "b" never did
    expect(budgets[0]).toMatchObject({ tokensUsed: 600, maxTokens: 1000 });
    expect(ofType(events, "run-finished")[0]).toMatchObject({ errorCode: "BUDGET", usage: { inputTokens: 1000, outputTokens: 200 } });
  });

  it("maxCostUsd is measured with the pricing of the model that answered ('*' for any model)", async () => {
    const h = await harness({
      steps: [
        { toolCalls: [{ id: "a", name: "flaky", args: {} }], usage: { inputTokens: 1000, outputTokens: 0 } },
        { text: "never", usage: { inputTokens: 1000, outputTokens: 0 } },
      ],
      host: { tools: [flaky([])] },
      extras: { pricing: { "*": { inputPerMTok: 600, outputPerMTok: 0 } } },
    });
    const { result } = await h.run("x", { maxCostUsd: 1 });
    // 0.6 after the first inference (within), 1.2 after the second (past).
    expect(result).toMatchObject({ status: "failed", errorCode: "BUDGET", iterations: 2 });
    expect(result.reason).toContain("maxCostUsd ($1)");
  });

  it("without pricing a run costs 0 and without limits nothing is enforced", async () => {
    const h = await harness({ steps: [{ text: "hi", usage: { inputTokens: 5_000_000, outputTokens: 1 } }] });
    const { result, events } = await h.run("x");
    expect(result.status).toBe("completed");
    expect(ofType(events, "run-finished")[0].usage).toEqual({ inputTokens: 5_000_000, outputTokens: 1, costUsd: 0, sandboxCpuMs: 0 });
  });
  it("a resumed run's budget starts from what the run had already used", async () => {
    const h = await harness({ steps: [{ text: "hi", usage: { inputTokens: 150, outputTokens: 50 } }] });
    const turn = {
      id: "turn_r",
      blocks: [{ id: "b1", kind: "user", role: "user", payload: { [PayloadKeys.text]: "x" }, metadata: {} }],
      metadata: {},
      data: {},
    };
    const resumeFrom = {
      turn,
      nextSeq: 7,
      inferenceId: "inf_r",
      iterations: 0,
      usage: { inputTokens: 700, outputTokens: 200, costUsd: 0 },
    };
    const { result, events } = await h.run("x", { maxTokens: 1000 }, { resumeFrom: resumeFrom as never });
    expect(result).toMatchObject({ status: "failed", errorCode: "BUDGET" });
    expect(result.reason).toContain("1100 tokens");
    expect(ofType(events, "run-finished")[0].usage).toMatchObject({ inputTokens: 850, outputTokens: 250 });
  });
  it("beforeRun and beforeFinish payloads carry the budget too", async () => {
    const seen: Record<string, Budget> = {};
    const h = await harness({
      steps: [{ text: "done", usage: { inputTokens: 40, outputTokens: 2 } }],
      host: {
        hooks: [
          {
            name: "watch",
            beforeRun: (p) => {
              seen.beforeRun = p.budget;
              return undefined;
            },
            beforeFinish: (p) => {
              seen.beforeFinish = p.budget;
              return undefined;
            },
          },
        ],
      },
      extras: { pricing: { scripted: { inputPerMTok: 1000, outputPerMTok: 0 } } },
    });
    const { result } = await h.run("x", { maxTokens: 500, maxCostUsd: 1 });
    expect(result.status).toBe("completed");
    expect(seen.beforeRun).toMatchObject({ iteration: 0, tokensUsed: 0, costUsd: 0, maxTokens: 500, maxCostUsd: 1 });
    expect(seen.beforeFinish).toMatchObject({ iteration: 1, tokensUsed: 42, maxTokens: 500 });
    expect(seen.beforeFinish.costUsd).toBeCloseTo(0.04, 9);
  });
});
