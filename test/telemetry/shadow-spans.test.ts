import { afterAll, describe, expect, it } from "vitest";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import { startOtlpReceiver } from "../helpers/otlp-receiver.js";

// Shadow scripts' hook calls are traced like the active ones, marked `hookbox.shadow`, through a real
// `hookbox serve` exporting to a real OTLP/HTTP receiver on loopback.
let server: ServeProcess | undefined;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>> | undefined;
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
});

const script = (name: string, hooks: string) => ({
  "policy.ts": `import { defineScript } from "hookbox";\nexport default defineScript({ name: ${JSON.stringify(name)}, hooks: { ${hooks} } });\n`,
});

describe("shadow hook spans", () => {
  it("are exported beside the active ones, with the shadow's own decisions, marked hookbox.shadow", async () => {
    receiver = await startOtlpReceiver();
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }]);
    server = await startServe({
      config: fixture.config,
      store: fixture.store,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
    });
    const acme = api(server.url, "acme-key");
    for (const [name, hooks] of [
      ["allow", "beforeToolCall() { return { action: 'proceed' }; }"],
      ["strict", "beforeToolCall(p) { if (p.call.id === 'c2') return { action: 'deny', reason: 'strict says no' }; }"],
    ]) {
      const uploaded = await acme.request("POST", "/v1/scripts", { name, entry: "policy.ts", files: script(name!, hooks!) });
      expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
    }
    const deployed = await acme.request("PUT", "/v1/deployment", {
      scripts: [{ name: "allow", version: 1 }],
      shadow: [{ name: "strict", version: 1 }],
    });
    expect(deployed.status).toBe(200);
    const { body: session } = await acme.request("POST", "/v1/sessions", {});
    const run = await acme.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "record both" });
    const { messages } = await readEvents(server.url, "acme-key", run.body.runId);
    expect(messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed" });

    // The run's spans are flushed when it ends; the receiver may still be taking them in. (The fixture's host
    // hook set, count-hooks, has spans of its own.)
    const hookSpans = () =>
      receiver!
        .spans()
        .filter((span) => span.name === "hookbox.hook" && ["allow", "strict"].includes(String(span.attributes["hookbox.script"])));
    for (let waited = 0; hookSpans().length < 4 && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    const seen = hookSpans()
      .map((span) => [span.attributes["hookbox.script"], span.attributes["hookbox.decision"], span.attributes["hookbox.shadow"] ?? false])
      .sort();
    expect(seen).toEqual(
      [
        ["allow", "proceed", false],
        ["allow", "proceed", false],
        ["strict", "deny", true],
        ["strict", "none", true],
      ].sort(),
    );
    const traceIds = new Set(hookSpans().map((span) => span.traceId));
    expect(traceIds.size).toBe(1);
  }, 120_000);
});
