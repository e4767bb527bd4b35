import { describe, expect, it } from "vitest";
import { harness, ofType } from "../helpers/harness.js";
import { receiverForThisProcess } from "../helpers/otlp-receiver.js";
import { shutdownTracing } from "../../src/telemetry/tracing.js";
import { TurnMetadataKeys } from "../../src/turns/keys.gen.js";
import type { HostTool } from "../../src/loop/tool-registry.js";

/*
 * Library use with export on, in this process: a host tool that runs a whole other run (an agent calling a
 * sub-agent). Each run's spans stay in its own trace, under its own run span.
 */

const shared = receiverForThisProcess();

describe("spans of a run started inside another run's tool call", () => {
  it("stay in their own trace, under their own run span", async () => {
    const inner = await harness({ steps: [{ text: "inner answer" }], tenant: "inner" });
    const delegate: HostTool = {
      name: "delegate",
      description: "asks a sub-agent",
      parameters: { type: "object" },
      async handler() {
        const { result } = await inner.run("sub question");
        return { innerTraceId: TurnMetadataKeys.traceId.get(result.turn.metadata) };
      },
    };
    const outer = await harness({
      steps: [{ toolCalls: [{ id: "d1", name: "delegate", args: {} }] }, { text: "outer answer" }],
      host: { tools: [delegate] },
      tenant: "outer",
    });
    const { result, events } = await outer.run("question");
    expect(result.status).toBe("completed");
    const innerTraceId = String((ofType(events, "tool-finished")[0].result as { innerTraceId?: string }).innerTraceId);
    const outerTraceId = TurnMetadataKeys.traceId.get(result.turn.metadata);
    expect(innerTraceId).not.toBe(outerTraceId);

    await shutdownTracing();
    const spans = shared.receiver.spans();
    const innerRun = spans.find((s) => s.name === "hookbox.run" && s.attributes["hookbox.tenant"] === "inner")!;
    const outerRun = spans.find((s) => s.name === "hookbox.run" && s.attributes["hookbox.tenant"] === "outer")!;
    expect(innerRun.traceId).toBe(innerTraceId);
    expect(outerRun.traceId).toBe(outerTraceId);
    const innerChats = spans.filter((s) => s.traceId === innerTraceId && s.name === "chat scripted");
    expect(innerChats).toHaveLength(1);
    expect(innerChats[0].parentSpanId).toBe(innerRun.spanId);
    const outerTool = spans.find((s) => s.name === "execute_tool delegate")!;
    expect(outerTool.traceId).toBe(outerTraceId);
    expect(outerTool.parentSpanId).toBe(outerRun.spanId);
    expect(spans.filter((s) => s.parentSpanId === outerTool.spanId)).toEqual([]);
  });
});
