import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jsonLines, runCli } from "../helpers/cli.js";
import { tmp } from "../helpers/harness.js";
import { startOpenAIServer } from "../helpers/openai-server.js";
import { startOtlpReceiver } from "../helpers/otlp-receiver.js";
import { readFileSync } from "node:fs";
import { api, readEvents, startServe } from "../server/serve-process.js";
import { writeFixture } from "../server/fixture.js";

/*
 * ctx.model.generate through the real CLI: the guard is a real OpenAI-compatible server on loopback (the
 * same engine code as the run's own model); its tokens count in the run's usage and budget and it is a span
 * of the run's trace; without --guard-model the call is denied.
 */

const guard = `import { defineScript } from "hookbox";
export default defineScript({
  name: "guarded",
  hooks: {
    async beforeToolCall(p) {
      try {
        const answer = await p.model.generate({
          messages: [{ role: "system", content: "Answer ABUSIVE or OK." }],
          prompt: JSON.stringify(p.call.args),
          maxTokens: 5,
        });
        console.log(JSON.stringify(answer));
        return answer.text.startsWith("ABUSIVE") ? { action: "deny", reason: answer.text } : undefined;
      } catch (e) {
        console.log(JSON.stringify({ code: (e as any).code, message: (e as Error).message }));
        return undefined;
      }
    },
  },
});
`;

let server: Awaited<ReturnType<typeof startOpenAIServer>>;
let dir: string;
beforeAll(async () => {
  server = await startOpenAIServer(Array(10).fill({ text: "ABUSIVE: too many refunds" }));
  dir = tmp("hookbox-guard-");
  writeFileSync(join(dir, "guard.ts"), guard);
  writeFileSync(
    join(dir, "model.json"),
    JSON.stringify({ steps: [{ toolCalls: [{ id: "c1", name: "refund", args: { customer: "bo", amount: 900 } }] }, { text: "done" }] }),
  );
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [{ name: "refund", description: "r", parameters: { type: "object" }, handler: async () => ({ refunded: true }) }];`,
  );
});
afterAll(() => server.close());

const baseArgs = () => [
  "run",
  join(dir, "guard.ts"),
  "--prompt",
  "refund bo",
  "--model",
  `scripted:${join(dir, "model.json")}`,
  "--host-tools",
  join(dir, "tools.mjs"),
  "--json",
];

describe("ctx.model.generate", () => {
  it("calls the granted guard model through the engine; its tokens show in the capability event", async () => {
    const result = await runCli([...baseArgs(), "--guard-model", "openai-compatible:guard-1", "--base-url", server.url]);
    expect(result.code, result.stderr).toBe(0);
    const events = jsonLines(result.stdout);
    expect(JSON.parse(events.find((e) => e.type === "log").message)).toEqual({
      text: "ABUSIVE: too many refunds",
      usage: { inputTokens: 11, outputTokens: 7 },
    });
    expect(events.find((e) => e.type === "capability")).toMatchObject({
      kind: "model",
      ok: true,
      script: "guarded",
      model: "guard-1",
      usage: { inputTokens: 11, outputTokens: 7, costUsd: 0 },
    });
    // The scripted run model used no tokens: the run's usage is the guard's.
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", usage: { inputTokens: 11, outputTokens: 7 } });
    expect(events.find((e) => e.type === "hook-decision" && e.script === "guarded").decision).toMatchObject({ action: "deny" });
    // What the guard received: the script's messages, its prompt last, its token bound, no tools.
    const request = server.requests.at(-1);
    expect(request.model).toBe("guard-1");
    expect(request.messages).toEqual([
      { role: "system", content: "Answer ABUSIVE or OK." },
      { role: "user", content: JSON.stringify({ customer: "bo", amount: 900 }) },
    ]);
    expect(request.max_tokens).toBe(5);
    expect(request.tools).toBeUndefined();
  });

  it("without a grant it is denied, and the run goes on", async () => {
    const result = await runCli(baseArgs());
    expect(result.code).toBe(0);
    const events = jsonLines(result.stdout);
    const outcome = JSON.parse(events.find((e) => e.type === "log").message);
    expect(outcome.code).toBe("CAPABILITY_DENIED");
    expect(outcome.message).toContain("ctx.model.generate: tenant default has no guardModel granted");
    expect(events.find((e) => e.type === "tool-finished")).toMatchObject({ result: { refunded: true } });
  });

  it("counts in the run's budget: past --max-tokens the run ends with BUDGET, priced by --pricing", async () => {
    const pricing = "guard-1=1000000,1000000";
    const result = await runCli([
      ...baseArgs(),
      "--guard-model",
      "openai-compatible:guard-1",
      "--base-url",
      server.url,
      "--max-tokens",
      "10",
      "--pricing",
      pricing,
    ]);
    const events = jsonLines(result.stdout);
    expect(events.find((e) => e.type === "capability")).toMatchObject({ usage: { inputTokens: 11, outputTokens: 7, costUsd: 18 } });
    const finished = events.at(-1);
    expect(finished).toMatchObject({
      type: "run-finished",
      status: "failed",
      errorCode: "BUDGET",
      usage: { inputTokens: 11, outputTokens: 7 },
    });
    expect(finished.reason).toContain("maxTokens (10)");
    // The run stopped before its next inference.
    expect(events.filter((e) => e.type === "inference-started")).toHaveLength(1);
  });

  it("is a span of the run's trace when traces are exported", async () => {
    const receiver = await startOtlpReceiver();
    try {
      const result = await runCli([...baseArgs(), "--guard-model", "openai-compatible:guard-1", "--base-url", server.url], {
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
      });
      expect(result.code, result.stderr).toBe(0);
      const spans = receiver.spans();
      const run = spans.find((s) => s.name === "hookbox.run")!;
      const guardSpan = spans.find((s) => s.name === "chat guard-1");
      expect(guardSpan, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
      expect(guardSpan!.traceId).toBe(run.traceId);
      expect(guardSpan!.attributes).toMatchObject({ "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 7 });
    } finally {
      await receiver.close();
    }
  });

  it("through the server: a tenant's guardModel, its tokens in GET /v1/usage", async () => {
    const steps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1", customer: "bo" } }] }, { text: "done" }];
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps, scripts: { "guard.ts": guard } }]);
    const config = JSON.parse(readFileSync(fixture.config, "utf8"));
    config.tenants[0].guardModel = { kind: "openai-compatible", model: "guard-1", baseUrl: server.url };
    writeFileSync(fixture.config, JSON.stringify(config));
    const serve = await startServe({ config: fixture.config, store: fixture.store });
    try {
      const client = api(serve.url, "acme-key");
      const session = await client.request("POST", "/v1/sessions", {});
      const started = await client.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "refund" });
      const { messages } = await readEvents(serve.url, "acme-key", started.body.runId);
      expect(messages.map((m) => m.event).find((e) => e.type === "capability")).toMatchObject({ kind: "model", ok: true });
      const usage = await client.request("GET", "/v1/usage");
      expect(usage.status).toBe(200);
      expect(usage.body).toMatchObject({ inputTokens: 11, outputTokens: 7, tokens: 18 });
    } finally {
      await serve.stop("SIGKILL");
    }
  });
});
