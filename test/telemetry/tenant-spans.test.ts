import { describe, expect, it } from "vitest";
import { harness } from "../helpers/harness.js";
import { receiverForThisProcess, type ReceivedSpan } from "../helpers/otlp-receiver.js";
import { shutdownTracing } from "../../src/telemetry/tracing.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import type { HookboxEvent } from "../../src/events/types.js";

/*
 * One tenant's spans must not make another's vanish. A collector refuses a request over its size limit (here
 * 96 KiB; 4 MiB for gRPC and 20 MiB for a collector's HTTP receiver by default, scaled down with the spans);
 * the "flood" tenant's model asks for a tool with a 300 KB name and for 119 calls with 1.1 KB ids, and its
 * spans wait in the exporter's queue while the "victim" tenant finishes five small runs. Each span is
 * bounded (names, attribute values, statuses), and each request holds one tenant's spans: whatever the
 * collector refuses of the flood, the victim's five runs arrive whole. Library use, in this process, through
 * a real OTLP/HTTP receiver on loopback.
 */

const LIMIT = 96 * 1024;
const shared = receiverForThisProcess({ maxRequestBytes: LIMIT });

const noop: HostTool = { name: "noop", description: "does nothing", parameters: { type: "object" }, handler: () => ({ done: true }) };
const longId = (index: number) => `call-${index}-${"i".repeat(1100)}`;

const runSpansOf = (spans: ReceivedSpan[], tenant: string) =>
  spans.filter((span) => span.name === "hookbox.run" && span.attributes["hookbox.tenant"] === tenant);

describe("spans of two tenants", () => {
  it("a tenant with huge names and errors does not make another tenant's run spans vanish; every span is bounded", async () => {
    const flood = await harness({
      tenant: "flood",
      host: { tools: [noop] },
      steps: [
        {
          toolCalls: [
            { id: "huge", name: "t".repeat(300_000), args: {} },
            ...Array.from({ length: 59 }, (_, i) => ({ id: longId(i), name: "noop", args: {} })),
          ],
        },
        { toolCalls: Array.from({ length: 60 }, (_, i) => ({ id: longId(100 + i), name: "noop", args: {} })) },
        { text: "done", delayMs: 3000 },
      ],
    });
    const victim = await harness({
      tenant: "victim",
      host: { tools: [noop] },
      steps: [{ toolCalls: [{ id: "v1", name: "noop", args: {} }] }, { text: "fine" }],
    });

    const handle = flood.runtime.start({ sessionId: "sess_flood", prompt: "flood" });
    // Wait until the flood's 120 tool spans are done and queued: its last inference has started (and takes 3 s).
    const floodEvents: HookboxEvent[] = [];
    for await (const event of handle.events()) {
      floodEvents.push(event);
      if (event.type === "inference-started" && event.iteration === 3) break;
    }
    for (let run = 0; run < 5; run++) expect((await victim.run(`question ${run}`)).result.status).toBe("completed");
    const floodResult = await handle.wait();
    expect(floodResult.status, floodResult.reason?.slice(0, 200)).toBe("completed");
    await shutdownTracing();
    const receiver = shared.receiver;

    const arrived = receiver.spans();
    const refused = receiver.refusedSpans();
    console.log(
      `${receiver.requests.length} requests (${receiver.requests.filter((r) => r.refused).length} refused, largest ${Math.max(
        ...receiver.requests.map((r) => r.body.length),
      )} bytes); spans arrived: victim ${arrived.filter((s) => s.attributes["hookbox.tenant"] === "victim").length}, flood ${
        arrived.filter((s) => s.attributes["hookbox.tenant"] === "flood").length
      }`,
    );

    // The victim's five runs arrived whole: run span, two inferences and the tool call each.
    expect(runSpansOf(arrived, "victim")).toHaveLength(5);
    expect(arrived.filter((span) => span.attributes["hookbox.tenant"] === "victim")).toHaveLength(20);
    // What the collector refused held none of the victim's spans.
    expect(refused.filter((span) => span.attributes["hookbox.tenant"] !== "flood")).toEqual([]);

    // Every span is bounded, whatever the model named its tool: name, attribute values, status message.
    const all = [...arrived, ...refused];
    const huge = all.find((span) => span.attributes["gen_ai.tool.call.id"] === "huge");
    expect(huge, "the flood's span with the 300 KB tool name").toBeDefined();
    expect(huge!.name.length).toBeLessThanOrEqual(128);
    expect(String(huge!.attributes["gen_ai.tool.name"]).length).toBeLessThanOrEqual(1024);
    expect(huge!.status?.message?.length).toBeLessThanOrEqual(1024);
    for (const span of all) {
      expect(span.name.length).toBeLessThanOrEqual(128);
      for (const value of Object.values(span.attributes)) expect(String(value).length).toBeLessThanOrEqual(1024);
      expect(span.status?.message?.length ?? 0).toBeLessThanOrEqual(1024);
    }
    // Each request holds one tenant's spans.
    for (const request of receiver.requests) {
      const tenants = new Set(
        [...request.body.toString("utf8").matchAll(/"hookbox\.tenant","value":\{"stringValue":"([^"]*)"/g)].map((m) => m[1]),
      );
      expect(tenants.size, "tenants in one request").toBeLessThanOrEqual(1);
    }
  }, 60_000);
});
