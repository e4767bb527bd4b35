import { describe, expect, it } from "vitest";
import { harness } from "../helpers/harness.js";
import { receiverForThisProcess } from "../helpers/otlp-receiver.js";
import { shutdownTracing } from "../../src/telemetry/tracing.js";
import type { HostTool } from "../../src/loop/tool-registry.js";

/*
 * Forty tenants' runs end within two seconds, and the collector takes two seconds to answer each request. The
 * OTLP exporter fails any request past 30 in flight (its concurrencyLimit), so sending each run's spans the
 * moment it ends lost some tenants' spans. Requests now pass a gate (8 in flight, tenants served in turn) and
 * wait there instead: every tenant's run arrives. Library use, in this process, through a real OTLP/HTTP
 * receiver on loopback.
 */

const shared = receiverForThisProcess({ delayMs: 2000 });
const noop: HostTool = { name: "noop", description: "does nothing", parameters: { type: "object" }, handler: () => ({ done: true }) };
const TENANTS = 40;

describe("spans against a slow collector", () => {
  it("forty tenants ending runs at once: every tenant's run arrives whole", async () => {
    const runs = Array.from({ length: TENANTS }, async (_, index) => {
      const tenant = await harness({
        tenant: `tenant-${index}`,
        host: { tools: [noop] },
        steps: [{ toolCalls: [{ id: "c1", name: "noop", args: {} }] }, { text: "done" }],
      });
      await new Promise((resolve) => setTimeout(resolve, index * 50));
      return (await tenant.run("go")).result.status;
    });
    expect(await Promise.all(runs)).toEqual(Array(TENANTS).fill("completed"));
    await shutdownTracing();

    const spans = shared.receiver.spans();
    const requests = shared.receiver.requests.length;
    console.log(`${requests} requests, ${spans.length} spans of ${TENANTS * 4}`);
    for (let index = 0; index < TENANTS; index++) {
      const own = spans.filter((span) => span.attributes["hookbox.tenant"] === `tenant-${index}`);
      expect(own.map((span) => span.name).sort(), `tenant-${index}`).toEqual([
        "chat scripted",
        "chat scripted",
        "execute_tool noop",
        "hookbox.run",
      ]);
    }
  }, 90_000);
});
