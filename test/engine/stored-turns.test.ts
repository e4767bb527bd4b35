import { describe, expect, it } from "vitest";
import { ScriptedModel } from "../../src/engine/scripted.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { Turn } from "../../src/turns/turn.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { lookupOrder } from "./provider-harness.js";

/*
 * Sessions stored before the turn kept provider metadata still load and continue: reasoning blocks with text
 * only, and unparsable arguments marked inside `args` (`__invalid_json__`), as the store holds them.
 */

const noPool: SandboxPool = {
  tenant() {
    throw new Error("no sandbox in this test");
  },
  async close() {},
};

const legacyCall = (id: string) => ({
  id: `blk_call_${id}`,
  kind: "tool_call",
  role: "assistant",
  payload: { id, name: "lookup_order", args: { __invalid_json__: "arguments for lookup_order are not a JSON object: {id: A17}" } },
  metadata: {},
});

/** A turn as the store wrote it before this version: one finished exchange with an unparsable call. */
const storedTurn = (): Turn =>
  JSON.parse(
    JSON.stringify({
      id: "turn_old",
      blocks: [
        { id: "blk_u", kind: "user", role: "user", payload: { text: "What is the total of order A17?" }, metadata: {} },
        { id: "blk_r", kind: "reasoning", role: "assistant", payload: { text: "I should look it up." }, metadata: {} },
        { id: "blk_t", kind: "llm_text", role: "assistant", payload: { text: "Looking." }, metadata: { "hookbox.tool_calls@v1": 1 } },
        legacyCall("c1"),
        {
          id: "blk_use",
          kind: "tool_use",
          role: "tool",
          payload: {
            id: "c1",
            name: "lookup_order",
            error: { message: "arguments for lookup_order are not a JSON object: {id: A17}", code: "TOOL_ARGS" },
          },
          metadata: { "hookbox.origin@v1": "host" },
        },
        { id: "blk_a", kind: "llm_text", role: "assistant", payload: { text: "Please give the id again." }, metadata: {} },
      ],
      metadata: { "hookbox.stop_reason@v1": "stop" },
      data: {},
    }),
  );

async function runtimeWith(model: ScriptedModel) {
  return createTenantRuntime({ name: "t", scripts: [], model: { kind: "scripted", file: "/unused" } }, noPool, {
    model,
    host: { tools: [lookupOrder()] },
  });
}

describe("turns stored by earlier versions", () => {
  it("continue: old reasoning goes back as reasoning, the old marker never reaches the model", async () => {
    const model = new ScriptedModel([{ text: "Order A17 totals 120." }]);
    const runtime = await runtimeWith(model);
    const result = await runtime.start({ sessionId: "s", prompt: "It is A17.", history: storedTurn() }).wait();
    expect(result.status, result.reason).toBe("completed");
    const assistant = model.calls[0].prompt.find((m) => m.role === "assistant")!;
    expect(assistant.content).toEqual([
      { type: "reasoning", text: "I should look it up." },
      { type: "text", text: "Looking." },
      { type: "tool-call", toolCallId: "c1", toolName: "lookup_order", input: {} },
    ]);
    expect(JSON.stringify(model.calls[0].prompt)).not.toContain("__invalid_json__");
  });

  it("resume: a pending call with the old marker fails TOOL_ARGS with its raw text in rawArgs", async () => {
    const turn = storedTurn();
    turn.blocks.push(
      { id: "blk_t2", kind: "llm_text", role: "assistant", payload: { text: "Again." }, metadata: {} },
      legacyCall("c2") as never,
    );
    const model = new ScriptedModel([{ text: "done" }]);
    const runtime = await runtimeWith(model);
    const handle = runtime.start({
      sessionId: "s",
      prompt: "",
      resumeFrom: { turn, nextSeq: 5, inferenceId: "inf_old", iterations: 2 },
    });
    const events: HookboxEvent[] = [];
    for await (const event of handle.events()) events.push(event);
    expect((await handle.wait()).status).toBe("completed");
    const finished = events.find((e) => e.type === "tool-finished")!;
    expect(finished).toMatchObject({
      callId: "c2",
      error: { code: "TOOL_ARGS", message: "arguments for lookup_order are not a JSON object: {id: A17}" },
    });
  });
});
