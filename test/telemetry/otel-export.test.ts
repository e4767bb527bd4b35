import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jsonLines, runCli } from "../helpers/cli.js";
import { tmp, writeSteps } from "../helpers/harness.js";
import { startOtlpReceiver, type ReceivedSpan } from "../helpers/otlp-receiver.js";

/*
 * OpenTelemetry export through the real CLI to a real OTLP/HTTP receiver on loopback. The CLI exits right
 * after the run: the spans being there when it has exited proves they are flushed before exit.
 */

let dir: string;
let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let steps: string;

beforeAll(async () => {
  dir = tmp("hookbox-otel-");
  writeFileSync(
    join(dir, "policy.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({
  hooks: {
    beforeToolCall: () => ({ action: "proceed" }),
    afterToolCall: () => undefined,
  },
});
`,
  );
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [{ name: "whoami", description: "returns the run's trace id", parameters: { type: "object" },
  handler: (_args, ctx) => ({ traceId: ctx.traceId }) }];
`,
  );
  steps = writeSteps([
    { toolCalls: [{ id: "c1", name: "whoami", args: {} }], usage: { inputTokens: 100, outputTokens: 20 } },
    { text: "done", usage: { inputTokens: 130, outputTokens: 5 } },
  ]);
  receiver = await startOtlpReceiver();
});
afterAll(async () => receiver?.close());

const runArgs = (extra: string[] = []) => [
  "run",
  join(dir, "policy.ts"),
  "--model",
  `scripted:${steps}`,
  "--host-tools",
  join(dir, "tools.mjs"),
  "--prompt",
  "who am I",
  "--json",
  ...extra,
];

const otelEnv = (extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_SERVICE_NAME: "hookbox-otel-test",
  ...extra,
});

/** The spans of one trace, by name. */
function tree(spans: ReceivedSpan[], traceId: string) {
  const mine = spans.filter((s) => s.traceId === traceId);
  const named = (name: string) => mine.filter((s) => s.name === name);
  return { mine, named };
}

describe("OpenTelemetry export (real CLI, loopback OTLP/HTTP receiver)", () => {
  it("exports the span tree with its attributes, as a child of the caller's traceparent; ctx.traceId is the trace id", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const callerSpan = "b7ad6b7169203331";
    const r = await runCli(runArgs(["--traceparent", `00-${traceId}-${callerSpan}-01`]), { env: otelEnv() });
    expect(r.code, r.stderr).toBe(0);
    const events = jsonLines(r.stdout);
    const started = events.find((e) => e.type === "run-started");
    const toolFinished = events.find((e) => e.type === "tool-finished");
    expect(toolFinished.result).toEqual({ traceId });

    // Flushed before the CLI exited: no waiting here.
    const { mine, named } = tree(receiver.spans(), traceId);
    expect(mine.map((s) => s.name).sort()).toEqual(
      ["chat scripted", "chat scripted", "execute_tool whoami", "hookbox.hook", "hookbox.hook", "hookbox.run"].sort(),
    );

    const [run] = named("hookbox.run");
    expect(run.parentSpanId).toBe(callerSpan);
    expect(run.resource["service.name"]).toBe("hookbox-otel-test");
    expect(run.attributes).toMatchObject({
      "hookbox.session_id": started.sessionId,
      "hookbox.run_id": started.runId,
      "hookbox.tenant": "default",
      "hookbox.status": "completed",
    });

    const chats = named("chat scripted");
    for (const chat of chats) {
      expect(chat.parentSpanId).toBe(run.spanId);
      expect(chat.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted" });
    }
    expect(chats.map((c) => [c.attributes["gen_ai.usage.input_tokens"], c.attributes["gen_ai.usage.output_tokens"]]).sort()).toEqual([
      [100, 20],
      [130, 5],
    ]);

    const [tool] = named("execute_tool whoami");
    expect(tool.parentSpanId).toBe(run.spanId);
    expect(tool.attributes).toMatchObject({ "gen_ai.tool.name": "whoami", "gen_ai.tool.call.id": "c1" });

    const hooks = named("hookbox.hook");
    for (const hook of hooks) {
      expect(hook.parentSpanId).toBe(tool.spanId);
      expect(hook.attributes["hookbox.script"]).toBe("policy");
      expect(String(hook.attributes["hookbox.bundle_hash"])).toMatch(/^[0-9a-f]{16,}$/);
    }
    const byHook = Object.fromEntries(hooks.map((h) => [h.attributes["hookbox.hook"], h.attributes["hookbox.decision"]]));
    expect(byHook).toEqual({ beforeToolCall: "proceed", afterToolCall: "none" });
  });

  it("without a traceparent the run span is a root, and ctx.traceId is the exported trace id", async () => {
    const r = await runCli(runArgs(), { env: otelEnv() });
    expect(r.code, r.stderr).toBe(0);
    const traceId = jsonLines(r.stdout).find((e) => e.type === "tool-finished").result.traceId as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const { named } = tree(receiver.spans(), traceId);
    const [run] = named("hookbox.run");
    expect(run).toBeDefined();
    expect(run.parentSpanId).toBeUndefined();
    expect(named("execute_tool whoami")).toHaveLength(1);
  });

  it("exports http/protobuf by default to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given", async () => {
    const before = receiver.requests.length;
    const r = await runCli(runArgs(), {
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/custom/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: "" },
    });
    expect(r.code, r.stderr).toBe(0);
    const traceId = jsonLines(r.stdout).find((e) => e.type === "tool-finished").result.traceId as string;
    const sent = receiver.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent[0].path).toBe("/custom/traces");
    expect(sent[0].contentType).toBe("application/x-protobuf");
    // The trace id travels as its 16 raw bytes in the protobuf body.
    expect(sent.some((request) => request.body.includes(Buffer.from(traceId, "hex")))).toBe(true);
  });

  it("with no endpoint nothing is sent and no OpenTelemetry module is even loaded", async () => {
    // A module hook in the CLI process reports every @opentelemetry import on stderr.
    const probe = join(dir, "probe.mjs");
    writeFileSync(
      probe,
      `import { registerHooks } from "node:module";
registerHooks({ resolve(specifier, context, next) {
  if (specifier.startsWith("@opentelemetry/")) process.stderr.write("LOADED " + specifier + "\\n");
  return next(specifier, context);
} });
`,
    );
    const nodeOptions = `--import ${probe}`;
    const before = receiver.requests.length;
    const off = await runCli(runArgs(), {
      env: {
        NODE_OPTIONS: nodeOptions,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "x",
        OTEL_EXPORTER_OTLP_ENDPOINT: "",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
      },
    });
    expect(off.code, off.stderr).toBe(0);
    expect(off.stderr).not.toContain("LOADED");
    expect(receiver.requests.length).toBe(before);
    expect(jsonLines(off.stdout).find((e) => e.type === "tool-finished").result.traceId).toMatch(/^[0-9a-f]{32}$/);

    // The probe works: with an endpoint the same run loads the SDK and sends.
    const on = await runCli(runArgs(), { env: { NODE_OPTIONS: nodeOptions, ...otelEnv() } });
    expect(on.code, on.stderr).toBe(0);
    expect(on.stderr).toContain("LOADED @opentelemetry/sdk-trace");
    expect(receiver.requests.length).toBeGreaterThan(before);
  });

  it("an unsupported OTEL_EXPORTER_OTLP_PROTOCOL is a clear error naming the variable, and a bad --traceparent is a usage error", async () => {
    const grpc = await runCli(runArgs(), { env: otelEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }) });
    expect(grpc.code).toBe(2);
    expect(grpc.stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported');
    const bad = await runCli(runArgs(["--traceparent", "00-xyz-01"]));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--traceparent");
  });
});
