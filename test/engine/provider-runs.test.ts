import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { HookboxEvent } from "../../src/events/types.js";
import type { HostHooks } from "../../src/loop/hook-provider.js";
import { PayloadKeys } from "../../src/turns/keys.gen.js";
import { usageDelta } from "../../src/store/usage.js";
import { jsonLines, runCli } from "../helpers/cli.js";
import { writeScripts } from "../helpers/harness.js";
import { generateText, streamText } from "ai";
import { fixture, recording, startRecordedServer } from "../helpers/recorded-provider.js";
import { lookupOrder, ofType, PROMPT, runAiSdk, runHookbox, sdkTools, systemText } from "./provider-harness.js";

const key = { apiKey: "test-key" };
const anthropic = (fetch: typeof globalThis.fetch) => createAnthropic({ ...key, fetch })("claude-sonnet-4-5");
const openaiResponses = (fetch: typeof globalThis.fetch) => createOpenAI({ ...key, fetch }).responses("gpt-5-mini");
const openaiChat = (fetch: typeof globalThis.fetch) => createOpenAI({ ...key, fetch }).chat("gpt-4o-mini");
const json = (file: string) => JSON.parse(fixture(file));
const ext = (stream: boolean) => (stream ? "sse" : "json");

/** A host hook set that records every payload it sees and answers with `decide`. */
function observer(decide: (hook: string, payload: any) => unknown = () => undefined) {
  const seen: { hook: string; payload: any }[] = [];
  const record = (hook: string) => (payload: any) => {
    seen.push({ hook, payload });
    return decide(hook, payload) as never;
  };
  const hooks: HostHooks = { name: "observer", beforeToolCall: record("beforeToolCall"), afterToolCall: record("afterToolCall") };
  return { hooks, seen };
}

describe.each([false, true])("provider-run tools (stream=%s)", (stream) => {
  const searches = [
    {
      name: "OpenAI web_search",
      model: openaiResponses,
      file: "openai/responses/web-search",
      providerTools: { web_search: createOpenAI(key).tools.webSearch({}) },
      sources: ["https://shop.example.com/help/shipping", "https://shop.example.com/help/orders"],
    },
    {
      name: "Anthropic web_search",
      model: anthropic,
      file: "anthropic/web-search",
      providerTools: { web_search: createAnthropic(key).tools.webSearch_20250305({}) },
      sources: ["https://shop.example.com/help/shipping"],
    },
  ];

  describe.each(searches)("$name", (search) => {
    it("costs one inference, keeps its call, result and sources, and hooks observe it without running it", async () => {
      const watch = observer();
      const run = await runHookbox({
        model: search.model,
        replies: [`${search.file}.${ext(stream)}`],
        stream,
        host: { hooks: [watch.hooks] },
        extras: { providerTools: search.providerTools as never },
      });
      expect(run.result.status, run.result.reason).toBe("completed");
      expect(run.requests).toHaveLength(1);
      expect(run.requests[0].body.tools.some((t: any) => t.type?.startsWith("web_search"))).toBe(true);
      const kinds = run.result.turn.blocks.map((b) => b.kind);
      expect(kinds).toContain("provider_tool_call");
      expect(kinds).toContain("provider_tool_result");
      expect(kinds).not.toContain("tool_call");
      expect(kinds).not.toContain("tool_use");
      const urls = run.result.turn.blocks.filter((b) => b.kind === "source").map((b) => b.payload[PayloadKeys.url]);
      for (const url of search.sources) expect(urls.some((u) => String(u).startsWith(url))).toBe(true);
      expect(run.result.text).toContain("two business days");

      const [finished] = ofType(run.events, "inference-finished");
      expect(finished.toolCalls).toEqual([expect.objectContaining({ name: "web_search", providerExecuted: true })]);
      const toolFinished = ofType(run.events, "tool-finished");
      expect(toolFinished).toEqual([expect.objectContaining({ name: "web_search", providerExecuted: true, durationMs: 0 })]);
      expect(ofType(run.events, "tool-started")).toEqual([]);
      expect(watch.seen.map((s) => s.hook)).toEqual(["beforeToolCall", "afterToolCall"]);
      expect(watch.seen[0].payload.call).toMatchObject({ name: "web_search", origin: "provider", providerExecuted: true });
      expect(watch.seen[1].payload.result).toEqual(toolFinished[0].result);
      // The store's usage totals count the host's tool executions only.
      expect(run.events.map(usageDelta).reduce((sum, delta) => sum + (delta?.toolCalls ?? 0), 0)).toBe(0);
    });

    it("a hook cannot skip a provider-run call: the contract error ends the run (fail-closed)", async () => {
      const watch = observer((hook) => (hook === "beforeToolCall" ? { action: "skip", result: "pretend" } : undefined));
      const run = await runHookbox({
        model: search.model,
        replies: [`${search.file}.${ext(stream)}`],
        stream,
        host: { hooks: [watch.hooks] },
        extras: { providerTools: search.providerTools as never },
      });
      expect(run.result.status).toBe("failed");
      expect(run.result.errorCode).toBe("HOOK_CONTRACT");
      expect(run.result.reason).toMatch(/not allowed for a provider-run call \(web_search\)/);
      expect(ofType(run.events, "tool-finished")).toEqual([]);
    });

    it("a hook may end the run on a provider-run call", async () => {
      const watch = observer((hook) => (hook === "afterToolCall" ? { action: "abort", reason: "no web" } : undefined));
      const run = await runHookbox({
        model: search.model,
        replies: [`${search.file}.${ext(stream)}`],
        stream,
        host: { hooks: [watch.hooks] },
        extras: { providerTools: search.providerTools as never },
      });
      expect(run.result.status).toBe("aborted");
      expect(run.result.reason).toBe("observer: no web");
    });
  });

  it("the answer sent back after a provider-run call is what the AI SDK sends (Anthropic server tool blocks in the assistant message)", async () => {
    const replies = [`anthropic/web-search.${ext(stream)}`, `anthropic/answer.${ext(stream)}`];
    const continued = observer();
    const finishing: HostHooks = {
      name: "again",
      beforeFinish: (p) => (p.continues === 0 ? { action: "continue", message: "And order A17?" } : undefined),
    };
    const providerTools = { web_search: createAnthropic(key).tools.webSearch_20250305({}) };
    const run = await runHookbox({
      model: anthropic,
      replies,
      stream,
      host: { hooks: [continued.hooks, finishing] },
      extras: { providerTools: providerTools as never },
    });
    expect(run.result.status, run.result.reason).toBe("completed");
    const assistant = run.requests[1].body.messages.find((m: any) => m.role === "assistant");
    expect(assistant.content.map((p: any) => p.type)).toEqual([
      "text",
      "server_tool_use",
      "web_search_tool_result",
      "text",
      "text",
      "text",
    ]);
    expect(assistant.content[2].content[0].encrypted_content).toBe(
      json("anthropic/web-search.json").content[2].content[0].encrypted_content,
    );
    // The AI SDK's loop stops at an answer without client calls; its conversion of the same history (that
    // answer, then the user's next message) is what hookbox's second request must match.
    const recorded = recording(replies);
    const model = anthropic(recorded.fetch);
    const common = { model, system: systemText(run), tools: { ...sdkTools(), ...providerTools } as never, maxRetries: 0 };
    const first = stream ? streamText({ ...common, prompt: PROMPT } as never) : await generateText({ ...common, prompt: PROMPT } as never);
    const history = [{ role: "user", content: PROMPT }, ...(await first.response).messages, { role: "user", content: "And order A17?" }];
    if (stream) await (streamText({ ...common, messages: history } as never) as ReturnType<typeof streamText>).consumeStream();
    else await generateText({ ...common, messages: history } as never);
    expect(run.requests[1].body).toEqual(recorded.requests[1].body);
  });
});

describe.each([false, true])("finish reasons (stream=%s)", (stream) => {
  it("a refusal after a tool step is reported as one, never with the text from before the tool call", async () => {
    const run = await runHookbox({
      model: anthropic,
      replies: [`anthropic/thinking-tool.${ext(stream)}`, `anthropic/refusal.${ext(stream)}`],
      stream,
    });
    expect(run.result.status).toBe("completed");
    expect(run.result.finishReason).toBe("content-filter");
    expect(run.result.text).toBeUndefined();
    const last = run.events.at(-1)!;
    expect(last).toMatchObject({ type: "run-finished", status: "completed", finishReason: "content-filter" });
    expect(last).not.toHaveProperty("text");
    expect(ofType(run.events, "inference-finished").map((e) => [e.finishReason, e.text])).toEqual([
      ["tool-calls", "I'll look up order A17."],
      ["content-filter", undefined],
    ]);
  });

  it("a cut-off answer says so: finishReason length on the inference, on beforeFinish and on the run", async () => {
    const finishes: unknown[] = [];
    const run = await runHookbox({
      model: openaiChat,
      replies: [`openai/chat/length.${ext(stream)}`],
      stream,
      host: { hooks: [{ name: "watch", beforeFinish: (p) => void finishes.push(p.finishReason) }] },
    });
    expect(run.result).toMatchObject({ status: "completed", finishReason: "length", text: "Order A17 totals" });
    expect(finishes).toEqual(["length"]);
    expect(run.events.at(-1)).toMatchObject({ type: "run-finished", finishReason: "length" });
  });
});

describe.each([false, true])("unparsable arguments (stream=%s)", (stream) => {
  it("reach hooks and events with the raw text in its own field, fail with TOOL_ARGS, and go back as generateText sends them", async () => {
    const watch = observer();
    const replies = [`openai/chat/bad-args.${ext(stream)}`, `openai/chat/answer.${ext(stream)}`];
    const run = await runHookbox({ model: openaiChat, replies, stream, host: { hooks: [watch.hooks] } });
    const raw = json("openai/chat/bad-args.json").choices[0].message.tool_calls[0].function.arguments;
    expect(run.result.status).toBe("completed");
    const [finished] = ofType(run.events, "inference-finished");
    expect(finished.toolCalls).toEqual([{ id: expect.any(String), name: "lookup_order", args: {}, rawArgs: raw }]);
    expect(watch.seen[0].payload.call).toMatchObject({ args: {}, rawArgs: raw });
    const [toolFinished] = ofType(run.events, "tool-finished");
    expect(toolFinished.error).toEqual({ message: `arguments for lookup_order are not a JSON object: ${raw}`, code: "TOOL_ARGS" });
    expect(JSON.stringify(run.events)).not.toContain("__invalid_json__");
    const sdk = await runAiSdk({ model: openaiChat, replies, stream, system: systemText(run), steps: 2 });
    const assistant = (body: any) => body.messages.find((m: any) => m.role === "assistant");
    expect(assistant(run.requests[1].body)).toEqual(assistant(sdk[1].body));
    expect(assistant(run.requests[1].body).tool_calls[0].function.arguments).toBe("{}");
  });
});

describe("stream errors take the HTTP errors' retry path", () => {
  it("Anthropic's overloaded_error after the first text is retried (the provider marks it retryable) and the run completes", async () => {
    const run = await runHookbox({
      model: anthropic,
      replies: ["anthropic/thinking-tool.sse", "anthropic/overloaded-midstream.sse", "anthropic/answer.sse"],
      stream: true,
      options: { modelRetries: 1 },
    });
    expect(run.result.status, run.result.reason).toBe("completed");
    expect(run.result.text).toBe("Order A17 totals 120.");
    const [retry] = ofType(run.events, "inference-retry");
    expect(retry).toMatchObject({ iteration: 2, attempt: 2, status: 529, model: "anthropic.messages:claude-sonnet-4-5" });
    expect(retry.message).toContain("Overloaded");
    // The retried answer is whole: nothing of the broken one ("Order") is in the turn.
    expect(run.result.turn.blocks.filter((b) => b.kind === "llm_text").map((b) => b.payload[PayloadKeys.text])).toEqual([
      "I'll look up order A17.",
      "Order A17 totals 120.",
    ]);
  });

  it("when the primary's retries are spent, a stream error goes to the fallback model like an HTTP error", async () => {
    const run = await runHookbox({
      model: anthropic,
      fallback: (fetch) => createAnthropic({ ...key, fetch })("claude-haiku-4-5"),
      replies: ["anthropic/overloaded-midstream.sse", "anthropic/answer.sse"],
      stream: true,
    });
    expect(run.result.status, run.result.reason).toBe("completed");
    expect(ofType(run.events, "inference-retry")).toEqual([
      expect.objectContaining({ attempt: 2, fallback: true, status: 529, model: "anthropic.messages:claude-haiku-4-5" }),
    ]);
    expect(run.requests.map((r) => r.body.model)).toEqual(["claude-sonnet-4-5", "claude-haiku-4-5"]);
  });

  it("when the retries are spent, the run fails MODEL naming the model and what it answered (never ENGINE)", async () => {
    const run = await runHookbox({
      model: anthropic,
      replies: ["anthropic/overloaded-midstream.sse"],
      stream: true,
    });
    expect(run.result).toMatchObject({ status: "failed", errorCode: "MODEL" });
    expect(run.result.reason).toBe("model anthropic.messages:claude-sonnet-4-5 answered 529 in its stream: overloaded_error: Overloaded");
  });

  // Cut in the first event, and after the first text delta.
  it.each([400, 900])("a connection cut after %i bytes of the stream is retried like a network error", async (cutAfterBytes) => {
    const run = await runHookbox({
      model: openaiChat,
      replies: [{ file: "openai/chat/answer.sse", cutAfterBytes }, "openai/chat/answer.sse"],
      stream: true,
      options: { modelRetries: 1 },
    });
    expect(run.result.status, run.result.reason).toBe("completed");
    expect(run.result.text).toBe("Order A17 totals 120.");
    const [retry] = ofType(run.events, "inference-retry");
    expect(retry).toMatchObject({ attempt: 2, model: "openai.chat:gpt-4o-mini" });
    expect(retry).not.toHaveProperty("status");
    expect(retry.message).toMatch(/terminated/);
  });

  it("a cut connection with no retry left fails MODEL saying the model broke off its answer", async () => {
    const run = await runHookbox({ model: openaiChat, replies: [{ file: "openai/chat/answer.sse", cutAfterBytes: 900 }], stream: true });
    expect(run.result).toMatchObject({ status: "failed", errorCode: "MODEL" });
    expect(run.result.reason).toMatch(/^model openai\.chat:gpt-4o-mini broke off its answer: .*terminated/);
  });
});

let pool: SandboxPool;
beforeAll(() => {
  pool = createSandboxPool();
});
afterAll(async () => pool.close());

describe("scripts see what the provider returned", () => {
  it("a script middleware reads the reasoning's signature and the provider-run call as typed blocks", async () => {
    const scripts = writeScripts({
      "policy.ts": `import { BlockKinds, isBlockKind } from "hookbox";
export default {
  middleware: [async function audit(turn, next) {
    const out = await next(turn);
    for (const block of out.blocks) {
      if (isBlockKind(block, BlockKinds.reasoning)) console.log("reasoning " + JSON.stringify(block.payload.provider_metadata));
      if (isBlockKind(block, BlockKinds.providerToolCall)) console.log("provider call " + block.payload.name + " " + JSON.stringify(block.payload.args));
      if (isBlockKind(block, BlockKinds.source)) console.log("source " + block.payload.url);
    }
    return out;
  }],
};`,
    });
    const run = await runHookbox({
      model: anthropic,
      replies: ["anthropic/web-search.json"],
      stream: false,
      scripts,
      pool,
      extras: { providerTools: { web_search: createAnthropic(key).tools.webSearch_20250305({}) } as never },
    });
    expect(run.result.status, run.result.reason).toBe("completed");
    const logs = ofType(run.events, "log").map((e) => e.message);
    expect(logs).toContain('provider call web_search {"query":"Example Shop shipping time"}');
    expect(logs).toContain("source https://shop.example.com/help/shipping");
    const thinking = await runHookbox({
      model: anthropic,
      replies: ["anthropic/thinking-tool.json", "anthropic/answer.json"],
      stream: false,
      scripts,
      pool,
    });
    const signature = json("anthropic/thinking-tool.json").content[0].signature;
    expect(ofType(thinking.events, "log").map((e) => e.message)).toContain(`reasoning {"anthropic":{"signature":"${signature}"}}`);
  });
});

describe("model errors keep their identity", () => {
  const rateLimited = {
    status: 429,
    body: {
      type: "error",
      error: { type: "rate_limit_error", message: "Number of request tokens has exceeded your per-minute rate limit" },
    },
  };

  it("without script middleware: MODEL, naming the model and its answer, and not a middleware's failure", async () => {
    const run = await runHookbox({ model: anthropic, replies: [rateLimited], stream: false });
    expect(run.result).toMatchObject({ status: "failed", errorCode: "MODEL" });
    expect(run.result.reason).toMatch(/^model anthropic\.messages:claude-sonnet-4-5 answered 429: Number of request tokens/);
    expect(run.result.reason).not.toContain("middleware");
  });

  it.each([
    ["awaits next()", "async function pass(turn, next) { return await next(turn); }"],
    [
      "catches and rethrows next()'s error",
      "async function logged(turn, next) { try { return await next(turn); } catch (e) { console.log('saw ' + e.code); throw e; } }",
    ],
  ])("through a script middleware that %s: still MODEL, the script's code is not blamed", async (_, middleware) => {
    const scripts = writeScripts({ "policy.ts": `export default { middleware: [${middleware}] };` });
    const run = await runHookbox({ model: anthropic, replies: [rateLimited], stream: false, scripts, pool });
    expect(run.result).toMatchObject({ status: "failed", errorCode: "MODEL" });
    expect(run.result.reason).toMatch(/^model anthropic\.messages:claude-sonnet-4-5 answered 429/);
  });

  it("a model error longer than the sandbox's error clip, rethrown by a script middleware, is still MODEL", async () => {
    const long = { status: 429, body: { type: "error", error: { type: "rate_limit_error", message: "slow down ".repeat(700) } } };
    const scripts = writeScripts({
      "policy.ts": `export default { middleware: [async function logged(turn, next) { try { return await next(turn); } catch (e) { throw e; } }] };`,
    });
    const run = await runHookbox({ model: anthropic, replies: [long], stream: false, scripts, pool });
    expect(run.result).toMatchObject({ status: "failed", errorCode: "MODEL" });
    expect(run.result.reason!.length).toBeGreaterThan(7000);
  });

  it("a script middleware that throws its own error with the model's code stays SCRIPT_ERROR", async () => {
    const scripts = writeScripts({
      "policy.ts": `export default { middleware: [async function forge(turn, next) { try { return await next(turn); } catch (e) { const f = new Error("something else"); f.code = e.code; throw f; } }] };`,
    });
    const run = await runHookbox({ model: anthropic, replies: [rateLimited], stream: false, scripts, pool });
    expect(run.result).toMatchObject({ status: "failed", errorCode: "SCRIPT_ERROR" });
  });
});

describe.each([false, true])("a context restart on Gemini (stream=%s)", (stream) => {
  it("places its text as a user message, where Gemini accepts it, and the run goes on", async () => {
    const restart = lookupOrder(() => ({ type: "context_restart_policy", enhanced_context_item: { refunds: "within 30 days" } }));
    const run = await runHookbox({
      model: (fetch) => createGoogleGenerativeAI({ ...key, fetch })("gemini-3-pro-preview"),
      replies: [`google/thought-tool.${ext(stream)}`, `google/answer.${ext(stream)}`],
      stream,
      tools: [restart],
    });
    expect(run.result.status, run.result.reason).toBe("completed");
    expect(ofType(run.events, "context-restart")).toEqual([expect.objectContaining({ restartType: "policy", applied: true })]);
    const body = run.requests[1].body;
    expect(body.systemInstruction.parts.map((p: any) => p.text).join("")).toContain("original request");
    const last = body.contents.at(-1);
    expect(last).toEqual({ role: "user", parts: [{ text: 'Context (policy): {"refunds":"within 30 days"}' }] });
  });
});

describe("openai-compatible with a DeepSeek reasoner (what --model openai-compatible: builds)", () => {
  it("the CLI sends reasoning_content back with the tool call, so the next inference is accepted", async () => {
    const server = await startRecordedServer(["deepseek/reasoning-tool.json", "deepseek/answer.json"]);
    try {
      const tools = writeScripts({
        "tools.mjs": `export default [{ name: "lookup_order", description: "Look up an order", parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] }, handler: (a) => ({ id: a.id, total: 120 }) }];`,
      })[0] as { path: string };
      const r = await runCli(
        [
          "run",
          "--model",
          "openai-compatible:deepseek-reasoner",
          "--base-url",
          server.url,
          "--host-tools",
          tools.path,
          "--prompt",
          "Total of A17?",
          "--json",
        ],
        { env: { OPENAI_API_KEY: "test-key" } },
      );
      expect(r.code, r.stderr).toBe(0);
      const events = jsonLines(r.stdout) as HookboxEvent[];
      expect(events.at(-1)).toMatchObject({
        type: "run-finished",
        status: "completed",
        text: "Order A17 totals 120.",
        finishReason: "stop",
      });
      const assistant = server.requests[1].body.messages.find((m: any) => m.role === "assistant");
      expect(assistant.reasoning_content).toBe(json("deepseek/reasoning-tool.json").choices[0].message.reasoning_content);
    } finally {
      await server.close();
    }
  });

  it("the CLI's transcript says when the last answer was cut off", async () => {
    const server = await startRecordedServer(["openai/chat/length.json"]);
    try {
      const r = await runCli(["run", "--model", "openai-compatible:gpt-4o-mini", "--base-url", server.url, "--prompt", "Total of A17?"], {
        env: { OPENAI_API_KEY: "test-key" },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("model stopped: cut off at the token limit");
      expect(r.stdout).toContain("■ completed (the last answer was cut off at the token limit)");
    } finally {
      await server.close();
    }
  });

  it("streaming through the library keeps the streamed reasoning and sends it back", async () => {
    const server = await startRecordedServer(["deepseek/reasoning-tool.sse", "deepseek/answer.sse"]);
    try {
      process.env.HOOKBOX_RECORDED_KEY = "test-key";
      const noPool: SandboxPool = {
        tenant() {
          throw new Error("unused");
        },
        async close() {},
      };
      const runtime = await createTenantRuntime(
        {
          name: "t",
          scripts: [],
          model: { kind: "openai-compatible", model: "deepseek-reasoner", baseUrl: server.url, apiKeyEnv: "HOOKBOX_RECORDED_KEY" },
        },
        noPool,
        { host: { tools: [lookupOrder()] }, stream: true },
      );
      const result = await runtime.start({ sessionId: "s", prompt: "Total of A17?" }).wait();
      expect(result.status, result.reason).toBe("completed");
      const reasoning = result.turn.blocks.filter((b) => b.kind === "reasoning").map((b) => b.payload[PayloadKeys.text]);
      expect(reasoning).toEqual([
        json("deepseek/reasoning-tool.json").choices[0].message.reasoning_content,
        json("deepseek/answer.json").choices[0].message.reasoning_content,
      ]);
      const assistant = server.requests[1].body.messages.find((m: any) => m.role === "assistant");
      expect(assistant.reasoning_content).toBe(reasoning[0]);
    } finally {
      await server.close();
    }
  });
});
