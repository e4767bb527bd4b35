import { describe, expect, it } from "vitest";
import { harness, ofType } from "../helpers/harness.js";
import type { ScriptedStep } from "../../src/engine/scripted.js";
import type { HostHooks } from "../../src/loop/hook-provider.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { PayloadKeys } from "../../src/turns/keys.gen.js";

/*
 * The loop's documented bounds (docs/loop.md), each at its edge: the run that stays exactly within a bound
 * goes on, the one just past it stops, naming the bound. Through the library, with host tools and hooks.
 */

const failing: HostTool = {
  name: "broken",
  description: "always fails",
  parameters: { type: "object" },
  handler: () => {
    throw new Error("down");
  },
};
const working: HostTool = { name: "fine", description: "works", parameters: { type: "object" }, handler: () => ({ ok: true }) };

const call = (id: string, name: string): ScriptedStep => ({ toolCalls: [{ id, name, args: {} }] });

describe("maxConsecutiveToolErrors (10)", () => {
  it("fails the run at the tenth error in a row, not before and not after", async () => {
    const steps = [...Array.from({ length: 12 }, (_, i) => call(`e${i + 1}`, "broken")), { text: "never" }];
    const h = await harness({ steps, host: { tools: [failing] } });
    const { result, events } = await h.run("x", { maxIterations: 20 });
    expect(result).toMatchObject({ status: "failed", errorCode: "TOOL_ERROR", reason: "10 consecutive tool errors", iterations: 10 });
    expect(ofType(events, "tool-finished")).toHaveLength(10);
  });

  it("a call that succeeds starts the count again: nine errors, a success, nine errors complete", async () => {
    const nine = (from: number) => Array.from({ length: 9 }, (_, i) => call(`e${from + i}`, "broken"));
    const steps = [...nine(1), call("ok", "fine"), ...nine(10), { text: "done" }];
    const h = await harness({ steps, host: { tools: [failing, working] } });
    const { result } = await h.run("x", { maxIterations: 25 });
    expect(result).toMatchObject({ status: "completed", iterations: 20 });
  });
});

describe("maxContextRestarts", () => {
  /** A tool that asks for a restart of a new suffix each time (a suffix already applied would be refused anyway). */
  const restarting = (): HostTool => {
    let n = 0;
    return {
      name: "enrich",
      description: "",
      parameters: { type: "object" },
      handler: () => ({ type: `context_restart_s${++n}`, enhanced_context_item: { n } }),
    };
  };

  it.each([
    [undefined, 5],
    [2, 2],
  ])("maxContextRestarts %s: %i restarts are applied, the next one is refused and the model sees an error", async (option, bound) => {
    const steps = [...Array.from({ length: bound + 1 }, (_, i) => call(`r${i + 1}`, "enrich")), { text: "done" }];
    const h = await harness({ steps, host: { tools: [restarting()] } });
    const { result, events } = await h.run("x", option === undefined ? {} : { maxContextRestarts: option });
    expect(result.status).toBe("completed");
    expect(ofType(events, "context-restart").map((e) => e.applied)).toEqual([...Array<boolean>(bound).fill(true), false]);
    const refused = result.turn.blocks.find((b) => b.kind === "tool_use")?.payload[PayloadKeys.error] as { message: string };
    expect(refused.message).toMatch(/restart/);
  });
});

describe("maxTokens at its edge", () => {
  const spend = (inputTokens: number, outputTokens: number): ScriptedStep[] => [
    { ...call("a", "fine"), usage: { inputTokens, outputTokens } },
    { text: "done", usage: { inputTokens: 0, outputTokens: 0 } },
  ];

  it("a run that uses exactly maxTokens completes", async () => {
    const h = await harness({ steps: spend(600, 400), host: { tools: [working] } });
    const { result, events } = await h.run("x", { maxTokens: 1000 });
    expect(result.status).toBe("completed");
    expect(ofType(events, "run-finished")[0]).toMatchObject({ usage: { inputTokens: 600, outputTokens: 400 } });
  });

  it("one token more fails it with BUDGET, naming the limit, and the inference's calls do not run", async () => {
    const h = await harness({ steps: spend(600, 401), host: { tools: [working] } });
    const { result, events } = await h.run("x", { maxTokens: 1000 });
    expect(result).toMatchObject({
      status: "failed",
      errorCode: "BUDGET",
      reason: "the run used 1001 tokens, past its limit maxTokens (1000)",
    });
    expect(ofType(events, "tool-started")).toHaveLength(0);
  });
});

describe("skip and deny do not run afterToolCall", () => {
  it.each([
    ["skip", { action: "skip", result: { cached: true } }, { [PayloadKeys.result]: { cached: true } }],
    ["deny", { action: "deny", reason: "no" }, { [PayloadKeys.error]: { message: "denied by policy: no", code: "DENIED" } }],
  ] as const)("%s: the tool and afterToolCall never run; the block is the hook's", async (_name, decision, payload) => {
    const after: string[] = [];
    const ran: string[] = [];
    const hooks: HostHooks = {
      name: "gate",
      beforeToolCall: () => structuredClone(decision) as never,
      afterToolCall: (p) => {
        after.push(p.call.id);
        return { result: { rewrittenAfter: true } };
      },
    };
    const tool: HostTool = { ...working, handler: () => (ran.push("fine"), { ok: true }) };
    const h = await harness({ steps: [call("c1", "fine"), { text: "done" }], host: { tools: [tool], hooks: [hooks] } });
    const { result, events } = await h.run();
    expect(ran).toEqual([]);
    expect(after).toEqual([]);
    expect(ofType(events, "hook-decision").map((d) => d.hook)).toEqual(["beforeToolCall"]);
    expect(result.turn.blocks.find((b) => b.kind === "tool_use")?.payload).toMatchObject(payload);
  });
});

describe("the approval wait", () => {
  it("a hook's timeoutMs cannot lengthen it past the run's approvalTimeoutMs", async () => {
    const hooks: HostHooks = { name: "asker", beforeToolCall: () => ({ action: "ask", reason: "check", timeoutMs: 600_000 }) };
    const h = await harness({ steps: [call("c1", "fine"), { text: "done" }], host: { tools: [working], hooks: [hooks] } });
    const handle = h.runtime.start({ sessionId: "sess_test", prompt: "x", options: { approvalTimeoutMs: 300 } });
    const events: HookboxEvent[] = [];
    for await (const event of handle.events()) {
      events.push(event);
      // Checked as soon as it is asked: a wait of the hook's 10 minutes would fail here, not hang the test.
      if (event.type === "approval.requested") expect(event.deadlineMs - event.timestampMs).toBeLessThanOrEqual(300);
    }
    expect(ofType(events, "approval.resolved")).toEqual([expect.objectContaining({ decision: "timeout" })]);
    expect((await handle.wait()).turn.blocks.find((b) => b.kind === "tool_use")?.payload[PayloadKeys.error]).toEqual({
      message: "denied by policy: no answer to the approval within 300 ms",
      code: "DENIED",
    });
  });

  it("a hook's shorter timeoutMs is kept", async () => {
    const hooks: HostHooks = { name: "asker", beforeToolCall: () => ({ action: "ask", reason: "check", timeoutMs: 50 }) };
    const h = await harness({ steps: [call("c1", "fine"), { text: "done" }], host: { tools: [working], hooks: [hooks] } });
    const { events } = await h.run("x", { approvalTimeoutMs: 60_000 });
    const [requested] = ofType(events, "approval.requested");
    expect(requested!.deadlineMs - requested!.timestampMs).toBeLessThanOrEqual(50);
    expect(ofType(events, "approval.resolved")).toEqual([expect.objectContaining({ decision: "timeout" })]);
  });
});

describe("answering an approval through the library", () => {
  it("unknown ids are NOT_FOUND, a schema-breaking edit is refused with its path and the approval stays open, a reject keeps its trimmed reason", async () => {
    const typed: HostTool = {
      name: "refund",
      description: "",
      parameters: { type: "object", properties: { order: { type: "object", properties: { amount: { type: "number", maximum: 100 } } } } },
      handler: () => ({ ok: true }),
    };
    const hooks: HostHooks = { name: "asker", beforeToolCall: () => ({ action: "ask", reason: "check" }) };
    const h = await harness({
      steps: [{ toolCalls: [{ id: "c1", name: "refund", args: { order: { amount: 5 } } }] }, { text: "done" }],
      host: { tools: [typed], hooks: [hooks] },
    });
    const handle = h.runtime.start({ sessionId: "sess_test", prompt: "x", options: { approvalTimeoutMs: 60_000 } });
    const events: HookboxEvent[] = [];
    for await (const event of handle.events()) {
      events.push(event);
      if (event.type !== "approval.requested") continue;
      expect(event.deadlineMs).toBeGreaterThan(event.timestampMs);
      expect(handle.openApprovals.map((open) => open.pauseId)).toEqual([event.pauseId]);
      expect(handle.answerApproval("pause_unknown", { decision: "reject" })).toEqual({
        ok: false,
        code: "NOT_FOUND",
        message: "no open approval pause_unknown in this run",
      });
      expect(handle.answerApproval(event.pauseId, { decision: "approve", args: { order: { amount: 500 } } })).toEqual({
        ok: false,
        code: "TOOL_ARGS",
        message: "args.order.amount must be <= 100 (tool refund)",
        path: ["order", "amount"],
      });
      expect(handle.openApprovals).toHaveLength(1);
      expect(handle.answerApproval(event.pauseId, { decision: "reject", reason: "  duplicate  " })).toEqual({
        ok: true,
        decision: "rejected",
      });
      expect(handle.openApprovals).toEqual([]);
      expect(handle.answerApproval(event.pauseId, { decision: "reject" })).toMatchObject({ ok: false, code: "NOT_FOUND" });
    }
    expect(ofType(events, "approval.resolved")).toEqual([expect.objectContaining({ decision: "rejected", reason: "duplicate" })]);
    expect((await handle.wait()).turn.blocks.find((b) => b.kind === "tool_use")?.payload[PayloadKeys.error]).toEqual({
      message: "denied by policy: rejected by the reviewer: duplicate",
      code: "DENIED",
    });
  });
});
