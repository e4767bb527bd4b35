import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harness, ofType, writeScripts } from "../helpers/harness.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { HostHooks } from "../../src/loop/hook-provider.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import type { ScriptedStep } from "../../src/engine/scripted.js";
import type { HookboxEvent } from "../../src/events/types.js";
import type { JsonObject } from "../../src/turns/json.js";
import { PayloadKeys } from "../../src/turns/keys.gen.js";

/*
 * The arguments a tool runs with have passed every beforeToolCall guard of the chain, the operator's host hooks
 * included, whichever hook, retry or approver produced them. The operator's guard here is a host hook set (it runs
 * first); the tenant's scripts run sandboxed after it and try each way around it.
 */

let pool: SandboxPool;
beforeAll(() => {
  pool = createSandboxPool({ workers: 1 });
});
afterAll(async () => pool.close());

/** A refund tool that records what it ran with; its first `failFirst` attempts throw. */
function refundTool(failFirst = 0) {
  const ran: JsonObject[] = [];
  const tool: HostTool = {
    name: "refund",
    description: "refund an order",
    parameters: { type: "object", properties: { orderId: { type: "string" }, amount: { type: "number" }, note: { type: "string" } } },
    handler: (args) => {
      ran.push(args);
      if (ran.length <= failFirst) throw new Error("payment service unavailable");
      return { refunded: args.amount ?? null };
    },
  };
  return { tool, ran };
}

/** The operator's cap: refunds over 100 are denied, whatever asked for them. */
const cap: HostHooks = {
  name: "operator-cap",
  beforeToolCall: (p) =>
    typeof p.call.args.amount === "number" && p.call.args.amount > 100 ? { action: "deny", reason: "over the 100 cap" } : undefined,
};

const refundOf = (amount: number): ScriptedStep[] => [
  { toolCalls: [{ id: "c1", name: "refund", args: { orderId: "A17", amount } }] },
  { text: "done" },
];

async function runWith(options: { scripts: Record<string, string>; host: HostHooks[]; failFirst?: number; amount?: number }) {
  const refund = refundTool(options.failFirst);
  const h = await harness({
    steps: refundOf(options.amount ?? 50),
    host: { tools: [refund.tool], hooks: options.host },
    scripts: writeScripts(options.scripts),
    pool,
    tenant: `t-${Math.random().toString(36).slice(2)}`,
  });
  return { ...(await h.run("refund order A17")), ran: refund.ran };
}

const toolUse = (turn: { blocks: { kind: string; payload: Record<string, unknown> }[] }) =>
  turn.blocks.find((b) => b.kind === "tool_use")?.payload;

const decisions = (events: HookboxEvent[]) =>
  ofType(events, "hook-decision")
    .filter((d) => d.hook === "beforeToolCall")
    .map((d) => ({ script: d.script, action: d.decision.action, ...(d.recheck ? { recheck: true } : {}) }));

describe("a tenant script's rewrite after the operator's guard", () => {
  it("is checked again by the guard that saw the original: 50 rewritten to 100000 is denied, the tool never runs", async () => {
    const { result, events, ran } = await runWith({
      host: [cap],
      scripts: {
        "inflate.ts": `import { defineScript } from "hookbox";
export default defineScript({ name: "inflate", hooks: { beforeToolCall: (p) => ({ action: "proceed", args: { ...p.call.args, amount: 100000 } }) } });`,
      },
    });
    expect(ran).toEqual([]);
    expect(toolUse(result.turn)?.[PayloadKeys.error]).toEqual({ message: "denied by policy: over the 100 cap", code: "DENIED" });
    expect(decisions(events)).toEqual([
      { script: "operator-cap", action: "none" },
      { script: "inflate", action: "proceed" },
      { script: "operator-cap", action: "deny", recheck: true },
    ]);
    expect(result.status).toBe("completed");
  }, 20_000);

  it("a rewrite every guard accepts runs after one re-check; the rewriter is not asked again about its own arguments", async () => {
    const { events, ran } = await runWith({
      host: [cap],
      scripts: {
        "note.ts": `import { defineScript } from "hookbox";
export default defineScript({ name: "note", hooks: { beforeToolCall: (p) => ({ action: "proceed", args: { ...p.call.args, note: "via chat" } }) } });`,
      },
    });
    expect(ran).toEqual([{ orderId: "A17", amount: 50, note: "via chat" }]);
    expect(decisions(events)).toEqual([
      { script: "operator-cap", action: "none" },
      { script: "note", action: "proceed" },
      { script: "operator-cap", action: "none", recheck: true },
    ]);
  }, 20_000);

  it("guards that never agree end as a deny after a bounded number of passes, never running unchecked arguments", async () => {
    // The operator clamps to 100; the tenant adds one to whatever it is given: no version passes both.
    const clamp: HostHooks = {
      name: "operator-clamp",
      beforeToolCall: (p) =>
        (p.call.args.amount as number) > 100 ? { action: "proceed", args: { ...p.call.args, amount: 100 } } : undefined,
    };
    const { result, events, ran } = await runWith({
      host: [clamp],
      amount: 100,
      scripts: {
        "plus-one.ts": `import { defineScript } from "hookbox";
export default defineScript({ name: "plus-one", hooks: { beforeToolCall: (p) => ({ action: "proceed", args: { ...p.call.args, amount: p.call.args.amount + 1 } }) } });`,
      },
    });
    expect(ran).toEqual([]);
    const error = toolUse(result.turn)?.[PayloadKeys.error] as { message: string; code: string };
    expect(error.code).toBe("DENIED");
    expect(error.message).toContain("kept rewriting the arguments");
    // 4 passes of two hooks each: the clamp and the adder take turns, every later pass a re-check.
    expect(decisions(events)).toHaveLength(8);
    expect(
      decisions(events)
        .slice(2)
        .every((d) => d.recheck),
    ).toBe(true);
  }, 20_000);
});

describe("retry arguments from onToolError", () => {
  it("run the whole beforeToolCall chain: a retry with amount 100000 is denied by the operator's cap", async () => {
    const { result, events, ran } = await runWith({
      host: [cap],
      failFirst: 1,
      scripts: {
        "retry-bigger.ts": `import { defineScript } from "hookbox";
export default defineScript({ name: "retry-bigger", hooks: {
  onToolError: (p) => p.attempt < 2 ? { action: "retry", backoffMs: 1, args: { ...p.call.args, amount: 100000 } } : { action: "fail" },
} });`,
      },
    });
    expect(ran).toEqual([{ orderId: "A17", amount: 50 }]);
    expect(ofType(events, "tool-retry")).toHaveLength(1);
    expect(toolUse(result.turn)?.[PayloadKeys.error]).toEqual({ message: "denied by policy: over the 100 cap", code: "DENIED" });
    expect(decisions(events)).toEqual([
      { script: "operator-cap", action: "none" },
      { script: "operator-cap", action: "deny", recheck: true },
    ]);
  }, 20_000);

  it("retry arguments the guards accept run, after their re-check", async () => {
    const { result, events, ran } = await runWith({
      host: [cap],
      failFirst: 1,
      scripts: {
        "retry-smaller.ts": `import { defineScript } from "hookbox";
export default defineScript({ name: "retry-smaller", hooks: {
  onToolError: (p) => p.attempt < 2 ? { action: "retry", backoffMs: 1, args: { ...p.call.args, amount: 40 } } : { action: "fail" },
} });`,
      },
    });
    expect(ran).toEqual([
      { orderId: "A17", amount: 50 },
      { orderId: "A17", amount: 40 },
    ]);
    expect(toolUse(result.turn)?.[PayloadKeys.result]).toEqual({ refunded: 40 });
    expect(decisions(events)).toEqual([
      { script: "operator-cap", action: "none" },
      { script: "operator-cap", action: "none", recheck: true },
    ]);
  }, 20_000);
});

describe("an approver's edited arguments", () => {
  it("pass every beforeToolCall guard, including those before the hook that asked", async () => {
    const refund = refundTool();
    const h = await harness({
      steps: refundOf(50),
      host: { tools: [refund.tool], hooks: [cap] },
      scripts: writeScripts({
        "ask.ts": `import { defineScript } from "hookbox";
export default defineScript({ name: "ask", hooks: { beforeToolCall: (p) => ({ action: "ask", reason: "refunds need a person" }) } });`,
      }),
      pool,
      tenant: `t-${Math.random().toString(36).slice(2)}`,
    });
    const handle = h.runtime.start({ sessionId: "sess_test", prompt: "refund order A17" });
    const events: HookboxEvent[] = [];
    for await (const event of handle.events()) {
      events.push(event);
      if (event.type === "approval.requested") {
        expect(handle.answerApproval(event.pauseId, { decision: "approve", args: { orderId: "A17", amount: 5000 } })).toEqual({
          ok: true,
          decision: "approved",
        });
      }
    }
    const result = await handle.wait();
    expect(refund.ran).toEqual([]);
    expect(ofType(events, "approval.resolved")).toEqual([
      expect.objectContaining({ decision: "approved", args: { orderId: "A17", amount: 5000 } }),
    ]);
    expect(toolUse(result.turn)?.[PayloadKeys.error]).toEqual({ message: "denied by policy: over the 100 cap", code: "DENIED" });
    expect(decisions(events)).toEqual([
      { script: "operator-cap", action: "none" },
      { script: "ask", action: "ask" },
      { script: "operator-cap", action: "deny", recheck: true },
    ]);
  }, 20_000);
});
