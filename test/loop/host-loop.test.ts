import { describe, expect, it } from "vitest";
import { harness, ofType } from "../helpers/harness.js";
import type { ChainVerdict } from "../../src/host/types.js";
import { currentRunContext } from "../../src/loop/ambient.js";
import { ScriptedModel } from "../../src/engine/scripted.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import { PayloadKeys, TurnDataKeys, contextRestartDisabledKey } from "../../src/turns/keys.gen.js";

const lookup = (log: string[] = []): HostTool => ({
  name: "lookup_order",
  description: "Look up an order",
  parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  handler: (args) => {
    log.push(String(args.id));
    return { id: args.id, total: 120 };
  },
});

describe("the tool loop with host tools", () => {
  it("runs tool calls and finishes with the model's text; seq is gap-free and run-finished is last", async () => {
    const log: string[] = [];
    const h = await harness({
      steps: [{ toolCalls: [{ id: "c1", name: "lookup_order", args: { id: "A17" } }] }, { text: "Order A17 is 120." }],
      host: { tools: [lookup(log)] },
    });
    const { result, events } = await h.run("refund A17");
    expect(result.status).toBe("completed");
    expect(result.text).toBe("Order A17 is 120.");
    expect(result.iterations).toBe(2);
    expect(log).toEqual(["A17"]);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)?.type).toBe("run-finished");
    const toolUse = result.turn.blocks.find((b) => b.kind === "tool_use");
    expect(toolUse?.payload[PayloadKeys.result]).toEqual({ id: "A17", total: 120 });
    expect(TurnDataKeys.toolDefinitions.get(result.turn.data).map((t) => t.name)).toEqual(["lookup_order"]);
  });

  it("without tool hooks, a recording run still gets a verdict of each tool-call chain, with its payload", async () => {
    const h = await harness({
      steps: [{ toolCalls: [{ id: "c1", name: "lookup_order", args: { id: "A17" } }] }, { text: "done" }],
      host: { tools: [lookup()] },
    });
    const verdicts: ChainVerdict[] = [];
    const persistence = { onSnapshot: () => undefined, onEvent: () => undefined, onHookCall: (v: ChainVerdict) => verdicts.push(v) };
    const { result } = await h.run("refund A17", undefined, { persistence });
    expect(result.status).toBe("completed");
    const toolChains = verdicts.filter((v) => v.hook === "beforeToolCall" || v.hook === "afterToolCall");
    expect(toolChains.map(({ hook, callId, verdict, decision }) => ({ hook, callId, verdict, decision }))).toEqual([
      { hook: "beforeToolCall", callId: "c1", verdict: "proceed", decision: { action: "none" } },
      { hook: "afterToolCall", callId: "c1", verdict: "proceed", decision: { action: "none" } },
    ]);
    expect(toolChains[1]!.payload).toMatchObject({ phase: "afterToolCall", result: { id: "A17", total: 120 } });
  });

  it("rejects invalid arguments before the handler runs, naming the field", async () => {
    const log: string[] = [];
    const h = await harness({
      steps: [{ toolCalls: [{ id: "c1", name: "lookup_order", args: { id: 5 } }] }, { text: "done" }],
      host: { tools: [lookup(log)] },
    });
    const { result, events } = await h.run();
    expect(log).toEqual([]);
    const finished = ofType(events, "tool-finished")[0];
    expect(finished.error?.code).toBe("TOOL_ARGS");
    expect(finished.error?.message).toContain("/id");
    expect(result.status).toBe("completed");
  });

  it("treats an unknown tool (even 'constructor') as an error the model sees", async () => {
    const h = await harness({ steps: [{ toolCalls: [{ id: "c1", name: "constructor", args: {} }] }, { text: "ok" }] });
    const { events } = await h.run();
    expect(ofType(events, "tool-finished")[0].error?.code).toBe("UNKNOWN_TOOL");
  });

  it("stops at maxIterations with MAX_ITERATIONS and keeps the last turn", async () => {
    const call = (id: string) => ({ toolCalls: [{ id, name: "lookup_order", args: { id } }] });
    const h = await harness({ steps: [call("a"), call("b"), call("c")], host: { tools: [lookup()] } });
    const { result } = await h.run("x", { maxIterations: 2 });
    expect(result.status).toBe("failed");
    expect(result.errorCode).toBe("MAX_ITERATIONS");
    expect(result.turn.blocks.filter((b) => b.kind === "tool_use")).toHaveLength(2);
  });

  it("appends parallel results in call order whatever the finishing order", async () => {
    const slow: HostTool = {
      name: "sleepy",
      description: "",
      parameters: { type: "object", properties: { ms: { type: "number" } } },
      handler: async (args) => {
        await new Promise((r) => setTimeout(r, Number(args.ms)));
        return { ms: args.ms as number };
      },
    };
    const h = await harness({
      steps: [
        {
          toolCalls: [
            { id: "a", name: "sleepy", args: { ms: 120 } },
            { id: "b", name: "sleepy", args: { ms: 10 } },
            { id: "c", name: "sleepy", args: { ms: 60 } },
          ],
        },
        { text: "done" },
      ],
      host: { tools: [slow] },
    });
    const { result, events } = await h.run("x", { maxParallelTools: 3 });
    const finishOrder = ofType(events, "tool-finished").map((e) => e.callId);
    expect(finishOrder).toEqual(["b", "c", "a"]);
    const uses = result.turn.blocks.filter((b) => b.kind === "tool_use").map((b) => b.payload[PayloadKeys.id]);
    expect(uses).toEqual(["a", "b", "c"]);
  });

  it("enforces tool timeouts; the failure goes through the error path", async () => {
    const hang: HostTool = { name: "hang", description: "", parameters: { type: "object" }, handler: () => new Promise(() => {}) };
    const h = await harness({ steps: [{ toolCalls: [{ id: "a", name: "hang", args: {} }] }, { text: "done" }], host: { tools: [hang] } });
    const { result, events } = await h.run("x", { toolTimeoutMs: 50 });
    expect(ofType(events, "tool-finished")[0].error?.code).toBe("TOOL_TIMEOUT");
    expect(result.status).toBe("completed");
  });

  it("error policy abort really aborts the run", async () => {
    const boom: HostTool = {
      name: "boom",
      description: "",
      parameters: { type: "object" },
      handler: () => {
        throw new Error("kaput");
      },
    };
    const h = await harness({ steps: [{ toolCalls: [{ id: "a", name: "boom", args: {} }] }, { text: "never" }], host: { tools: [boom] } });
    const { result } = await h.run("x", { errorPolicy: "abort" });
    expect(result.status).toBe("aborted");
    expect(result.reason).toContain("kaput");
  });

  it("gives host tools the run's ids through the async context and ctx", async () => {
    let seen: unknown;
    let ctxSeen: unknown;
    const spy: HostTool = {
      name: "spy",
      description: "",
      parameters: { type: "object" },
      handler: async (_args, ctx) => {
        await Promise.resolve();
        seen = currentRunContext();
        ctxSeen = ctx;
        return null;
      },
    };
    const h = await harness({ steps: [{ toolCalls: [{ id: "a", name: "spy", args: {} }] }, { text: "done" }], host: { tools: [spy] } });
    await h.run("the original request", { tags: { team: "billing" } });
    expect(seen).toMatchObject({
      sessionId: "sess_test",
      tags: { team: "billing" },
      userContext: { originalUserRequest: "the original request" },
    });
    expect(ctxSeen).toMatchObject({ toolName: "spy", callId: "a", attempt: 1, sessionId: "sess_test" });
    for (const key of ["inferenceId", "traceId", "turnId", "timestampMs"]) expect(ctxSeen).toHaveProperty(key);
  });

  it("applies a context restart: no tool result, the item appended, the disable flag set", async () => {
    const fetcher: HostTool = {
      name: "fetch_docs",
      description: "",
      parameters: { type: "object" },
      handler: () => ({ type: "context_restart_docs", enhanced_context_item: { text: "refund policy v2" } }),
    };
    const h = await harness({
      steps: [{ toolCalls: [{ id: "r1", name: "fetch_docs", args: {} }] }, { text: "with docs" }],
      host: { tools: [fetcher] },
    });
    const { result, events } = await h.run();
    expect(ofType(events, "context-restart")[0]).toMatchObject({ callId: "r1", restartType: "docs", applied: true });
    expect(result.turn.blocks.some((b) => b.kind === "tool_use")).toBe(false);
    expect(result.turn.blocks.some((b) => b.kind === "tool_call")).toBe(false);
    expect(result.turn.blocks.find((b) => b.kind === "context")?.payload[PayloadKeys.item]).toEqual({ text: "refund policy v2" });
    expect(contextRestartDisabledKey("docs").get(result.turn.data)).toBe(true);
    expect(result.status).toBe("completed");
  });

  it("an unknown restart suffix is an error the model sees when the generic handler is off", async () => {
    const fetcher: HostTool = {
      name: "f",
      description: "",
      parameters: { type: "object" },
      handler: () => ({ type: "context_restart_zzz" }),
    };
    const h = await harness({
      steps: [{ toolCalls: [{ id: "r1", name: "f", args: {} }] }, { text: "ok" }],
      host: { tools: [fetcher] },
      extras: { restartHandlers: { generic: false } },
    });
    const { result, events } = await h.run();
    expect(ofType(events, "context-restart")[0].applied).toBe(false);
    expect(JSON.stringify(result.turn.blocks.find((b) => b.kind === "tool_use")?.payload)).toContain("no context restart handler");
  });

  it("a tool's malformed restart type is refused as an error the model sees; the run goes on", async () => {
    const fetcher: HostTool = {
      name: "f",
      description: "",
      parameters: { type: "object" },
      handler: () => ({ type: "context_restart_notes<img src=x>", enhanced_context_item: { text: "x" } }),
    };
    const h = await harness({
      steps: [{ toolCalls: [{ id: "r1", name: "f", args: {} }] }, { text: "went on" }],
      host: { tools: [fetcher] },
    });
    const { result, events } = await h.run();
    expect(ofType(events, "context-restart")).toMatchObject([{ callId: "r1", restartType: "notes<img src=x>", applied: false }]);
    const refusal = result.turn.blocks.find((b) => b.kind === "tool_use")?.payload[PayloadKeys.error];
    expect(refusal).toEqual({
      code: "CONTEXT_RESTART",
      message: `context restart refused: "notes<img src=x>" is not a restart type (context_restart_ then letters, digits, '_', '-' or '.')`,
    });
    expect(result.turn.blocks.some((b) => b.kind === "context")).toBe(false);
    expect(result).toMatchObject({ status: "completed", text: "went on" });
  });

  it("fails clearly when the scripted model runs out of steps", async () => {
    const h = await harness({
      steps: [{ toolCalls: [{ id: "a", name: "lookup_order", args: { id: "x" } }] }],
      host: { tools: [lookup()] },
    });
    const { result } = await h.run();
    expect(result.status).toBe("failed");
    expect(result.reason).toContain("ran out of steps");
  });
});

describe("run deadline", () => {
  it("ends a run whose deadline passes as failed with DEADLINE, and puts deadlineMs in every ctx", async () => {
    let seenDeadline: unknown;
    const slow: HostTool = {
      name: "slow",
      description: "",
      parameters: { type: "object" },
      handler: async (_args, ctx, { signal }) => {
        seenDeadline = ctx.deadlineMs;
        await new Promise((resolve, reject) => {
          const t = setTimeout(resolve, 60_000);
          signal.addEventListener("abort", () => {
            clearTimeout(t);
            reject(signal.reason);
          });
        });
        return null;
      },
    };
    const h = await harness({ steps: [{ toolCalls: [{ id: "a", name: "slow", args: {} }] }, { text: "never" }], host: { tools: [slow] } });
    // The deadline leaves room for the run to reach the tool on a loaded machine; the tool's own wait is far longer.
    const deadlineMs = Date.now() + 1_500;
    const started = performance.now();
    const { result } = await h.run("x", { deadlineMs });
    expect(result.status).toBe("failed");
    expect(result.errorCode).toBe("DEADLINE");
    expect(seenDeadline).toBe(deadlineMs);
    expect(performance.now() - started).toBeLessThan(20_000);
  });
});

describe("user context", () => {
  it("reaches every model call even when a middleware rewrote the user's message", async () => {
    const prompt = "Cancel my subscription but keep my data export, and email the invoice to accounting@example.com";
    const model = new ScriptedModel([{ toolCalls: [{ id: "a", name: "lookup_order", args: { id: "1" } }] }, { text: "done" }]);
    const h = await harness({
      steps: [],
      extras: { model: () => model },
      host: {
        tools: [lookup()],
        middleware: [
          {
            name: "summarise",
            run: (turn, next) =>
              next({
                ...turn,
                blocks: turn.blocks.map((b) => (b.kind === "user" ? { ...b, payload: { text: "cancel subscription" } } : b)),
              }),
          },
        ],
      },
    });
    const handle = h.runtime.start({ sessionId: "s", prompt });
    const result = await handle.wait();
    expect(result.status).toBe("completed");
    // What the model was shown of the user context is in the turn: by default the original request only.
    expect(result.turn.metadata["hookbox.model_context@v1"]).toEqual({ originalUserRequest: prompt });
    expect(model.calls).toHaveLength(2);
    for (const call of model.calls) {
      const text = JSON.stringify(call.prompt);
      expect(text).toContain("cancel subscription"); // what the middleware left of the user's message
      expect(text).toContain("accounting@example.com"); // the unabridged request, from the user context
    }
  });
});

describe("the turn's tool definitions", () => {
  it("are one copy checked at load and shared by every run of a runtime, which no run can change in place", async () => {
    const attempts: string[] = [];
    const h = await harness({
      steps: [{ text: "ok" }],
      host: {
        tools: [lookup()],
        middleware: [
          {
            name: "tamper",
            run: (turn, next) => {
              const definitions = turn.data["hookbox.tool_definitions@v1"] as Array<{ name: string; description: string }>;
              try {
                definitions.push({ name: "injected", description: "not a tool" });
                definitions[0]!.description = "changed";
                attempts.push("changed");
              } catch (error) {
                attempts.push((error as Error).name);
              }
              return next(turn);
            },
          },
        ],
      },
    });
    const first = await h.run("one");
    const second = await h.run("two");
    expect(first.result.status).toBe("completed");
    expect(second.result.status).toBe("completed");
    expect(attempts).toEqual(["TypeError", "TypeError"]);
    const definitions = [first, second].map(({ result }) => TurnDataKeys.toolDefinitions.get(result.turn.data));
    expect(definitions[1]).toEqual([
      { name: "lookup_order", description: "Look up an order", parameters: lookup().parameters, origin: "host" },
    ]);
    expect(definitions[0]).toEqual(definitions[1]);
  });
});
