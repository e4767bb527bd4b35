import { afterEach, describe, expect, it } from "vitest";
import { startOpenAIServer } from "../helpers/openai-server.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { HostTool } from "../../src/loop/tool-registry.js";

const noPool: SandboxPool = {
  tenant() {
    throw new Error("unused");
  },
  async close() {},
};
const lookup: HostTool = {
  name: "lookup_order",
  description: "Look up an order",
  parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  handler: (args) => ({ id: args.id, total: 120 }),
};

describe.each([false, true])("the openai-compatible engine over loopback HTTP (stream=%s)", (stream) => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  it("runs a tool call round trip through a real HTTP server", async () => {
    const server = await startOpenAIServer([
      { toolCalls: [{ id: "call_1", name: "lookup_order", args: { id: "A17" } }] },
      { text: "Order A17 totals 120." },
    ]);
    close = server.close;
    process.env.HOOKBOX_TEST_KEY = "sk-test";
    const runtime = await createTenantRuntime(
      {
        name: "t",
        scripts: [],
        model: { kind: "openai-compatible", model: "gpt-test", baseUrl: server.url, apiKeyEnv: "HOOKBOX_TEST_KEY" },
      },
      noPool,
      { host: { tools: [lookup] }, stream },
    );
    const handle = runtime.start({ sessionId: "s", prompt: "What is the total of order A17? Please be precise." });
    const result = await handle.wait();
    expect(result.status).toBe("completed");
    expect(result.text).toBe("Order A17 totals 120.");
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0].stream ?? false).toBe(stream);
    expect(server.requests[0].tools[0].function.name).toBe("lookup_order");
    // the user's original request reaches every model call
    for (const request of server.requests) {
      const system = request.messages
        .filter((m: any) => m.role === "system")
        .map((m: any) => m.content)
        .join("\n");
      expect(system).toContain("original request");
      expect(system).toContain("Please be precise.");
    }
    const toolMessage = server.requests[1].messages.find((m: any) => m.role === "tool");
    expect(toolMessage.tool_call_id).toBe("call_1");
    expect(JSON.parse(toolMessage.content)).toEqual({ id: "A17", total: 120 });
  });
});
