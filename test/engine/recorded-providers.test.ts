import { describe, expect, it } from "vitest";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createDeepSeek } from "@ai-sdk/deepseek";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { defaultSettingsMiddleware, wrapLanguageModel } from "ai";
import { PayloadKeys } from "../../src/turns/keys.gen.js";
import type { HostHooks } from "../../src/loop/hook-provider.js";
import { fixture } from "../helpers/recorded-provider.js";
import { ofType, runAiSdk, runHookbox, systemText } from "./provider-harness.js";

/*
 * A tool call with reasoning, then the answer, replayed through each real provider package: hookbox keeps
 * every part with its provider metadata and sends back what the provider requires, exactly what the AI SDK's
 * own generateText / streamText sends for the same history.
 */

const key = { apiKey: "test-key" };

interface Case {
  name: string;
  model(fetch: typeof globalThis.fetch): LanguageModelV4;
  /** The recorded tool-call answer and final answer, without the extension. */
  files: [string, string];
  /** What the provider needs back in the second request, checked on its body. */
  sentBack(body: any): void;
  /** The reasoning the turn keeps, with its provider metadata. */
  reasoning(blocks: { payload: Record<string, any> }[]): void;
}

const json = (file: string) => JSON.parse(fixture(file));

/** Ids `prefix-1`, `prefix-2`, ... (each model instance counts from 1). */
const counter = (prefix: string) => {
  let next = 0;
  return () => `${prefix}-${++next}`;
};

const cases: Case[] = [
  {
    name: "Anthropic with extended thinking (signature and redacted thinking before the tool_use)",
    model: (fetch) => createAnthropic({ ...key, fetch })("claude-sonnet-4-5"),
    files: ["anthropic/thinking-tool", "anthropic/answer"],
    sentBack(body) {
      const recorded = json("anthropic/thinking-tool.json").content;
      const assistant = body.messages.find((m: any) => m.role === "assistant");
      expect(assistant.content.map((part: any) => part.type)).toEqual(["thinking", "redacted_thinking", "text", "tool_use"]);
      expect(assistant.content[0]).toMatchObject({ thinking: recorded[0].thinking, signature: recorded[0].signature });
      expect(assistant.content[1]).toMatchObject({ data: recorded[1].data });
      expect(assistant.content[3]).toMatchObject({ id: recorded[3].id, name: "lookup_order", input: { id: "A17" } });
    },
    reasoning(blocks) {
      const recorded = json("anthropic/thinking-tool.json").content;
      expect(blocks).toHaveLength(2);
      expect(blocks[0].payload[PayloadKeys.text]).toBe(recorded[0].thinking);
      expect(blocks[0].payload[PayloadKeys.providerMetadata]).toEqual({ anthropic: { signature: recorded[0].signature } });
      expect(blocks[1].payload[PayloadKeys.text]).toBe("");
      expect(blocks[1].payload[PayloadKeys.providerMetadata]).toEqual({ anthropic: { redactedData: recorded[1].data } });
    },
  },
  {
    name: "DeepSeek reasoner (reasoning_content on the assistant message of a tool call)",
    model: (fetch) => createDeepSeek({ ...key, fetch })("deepseek-reasoner"),
    files: ["deepseek/reasoning-tool", "deepseek/answer"],
    sentBack(body) {
      const recorded = json("deepseek/reasoning-tool.json").choices[0].message;
      const assistant = body.messages.find((m: any) => m.role === "assistant");
      expect(assistant.reasoning_content).toBe(recorded.reasoning_content);
      expect(assistant.tool_calls[0]).toMatchObject({ id: recorded.tool_calls[0].id, function: { name: "lookup_order" } });
      expect(body.messages.find((m: any) => m.role === "tool")).toMatchObject({ tool_call_id: recorded.tool_calls[0].id });
    },
    reasoning(blocks) {
      expect(blocks.map((b) => b.payload[PayloadKeys.text])).toEqual([
        json("deepseek/reasoning-tool.json").choices[0].message.reasoning_content,
      ]);
    },
  },
  {
    name: "openai-compatible, as `--model openai-compatible:` builds it, with DeepSeek's reasoner (reasoning_content back)",
    model: (fetch) =>
      createOpenAICompatible({ name: "openai-compatible", baseURL: "https://api.deepseek.com/v1", apiKey: "k", fetch }).chatModel(
        "deepseek-reasoner",
      ),
    files: ["deepseek/reasoning-tool", "deepseek/answer"],
    sentBack(body) {
      const recorded = json("deepseek/reasoning-tool.json").choices[0].message;
      const assistant = body.messages.find((m: any) => m.role === "assistant");
      expect(assistant.reasoning_content).toBe(recorded.reasoning_content);
      expect(assistant.tool_calls[0]).toMatchObject({ id: recorded.tool_calls[0].id, function: { name: "lookup_order" } });
    },
    reasoning(blocks) {
      expect(blocks.map((b) => b.payload[PayloadKeys.text])).toEqual([
        json("deepseek/reasoning-tool.json").choices[0].message.reasoning_content,
      ]);
    },
  },
  {
    name: "Gemini 3 (the function call's thought signature, never the skip sentinel)",
    // Gemini's answers carry no call ids: the provider makes them, the same ones in both runs.
    model: (fetch) => createGoogleGenerativeAI({ ...key, fetch, generateId: counter("gemini-call") })("gemini-3-pro-preview"),
    files: ["google/thought-tool", "google/answer"],
    sentBack(body) {
      const recorded = json("google/thought-tool.json").candidates[0].content.parts;
      const model = body.contents.find((c: any) => c.role === "model");
      const call = model.parts.find((part: any) => part.functionCall);
      expect(call).toMatchObject({
        functionCall: { name: "lookup_order", args: { id: "A17" } },
        thoughtSignature: recorded[1].thoughtSignature,
      });
      expect(JSON.stringify(body)).not.toContain("skip_thought_signature_validator");
      expect(model.parts[0]).toMatchObject({ text: recorded[0].text, thought: true });
    },
    reasoning(blocks) {
      expect(blocks.map((b) => b.payload[PayloadKeys.text])).toEqual([
        json("google/thought-tool.json").candidates[0].content.parts[0].text,
      ]);
    },
  },
  {
    name: "OpenAI Responses without storage (the encrypted reasoning item before the function call)",
    model: (fetch) =>
      wrapLanguageModel({
        model: createOpenAI({ ...key, fetch }).responses("gpt-5-mini"),
        middleware: defaultSettingsMiddleware({
          settings: { providerOptions: { openai: { store: false, include: ["reasoning.encrypted_content"] } } },
        }),
      }),
    files: ["openai/responses/reasoning-tool", "openai/responses/answer"],
    sentBack(body) {
      const recorded = json("openai/responses/reasoning-tool.json").output;
      const reasoning = body.input.find((item: any) => item.type === "reasoning");
      expect(reasoning).toMatchObject({ id: recorded[0].id, encrypted_content: recorded[0].encrypted_content });
      expect(reasoning.summary).toEqual([{ type: "summary_text", text: recorded[0].summary[0].text }]);
      const index = (type: string) => body.input.findIndex((item: any) => item.type === type);
      expect(index("reasoning")).toBeLessThan(index("function_call"));
      expect(body.input[index("function_call")]).toMatchObject({ call_id: recorded[1].call_id, name: "lookup_order" });
      expect(body.input[index("function_call_output")]).toMatchObject({ call_id: recorded[1].call_id });
    },
    reasoning(blocks) {
      const recorded = json("openai/responses/reasoning-tool.json").output[0];
      expect(blocks).toHaveLength(1);
      expect(blocks[0].payload[PayloadKeys.providerMetadata]).toEqual({
        openai: { itemId: recorded.id, reasoningEncryptedContent: recorded.encrypted_content },
      });
    },
  },
  {
    name: "OpenAI chat completions (a plain tool round trip)",
    model: (fetch) => createOpenAI({ ...key, fetch }).chat("gpt-4o-mini"),
    files: ["openai/chat/tool-call", "openai/chat/answer"],
    sentBack(body) {
      const recorded = json("openai/chat/tool-call.json").choices[0].message.tool_calls[0];
      expect(body.messages.find((m: any) => m.role === "assistant").tool_calls[0]).toMatchObject({ id: recorded.id });
      expect(JSON.parse(body.messages.find((m: any) => m.role === "tool").content)).toEqual({ id: "A17", total: 120 });
    },
    reasoning(blocks) {
      expect(blocks).toEqual([]);
    },
  },
];

describe.each(cases)("$name", (c) => {
  describe.each([false, true])("stream=%s", (stream) => {
    const replies = c.files.map((file) => `${file}.${stream ? "sse" : "json"}`);

    it("runs the call, keeps every part with its metadata, and sends back what the provider requires", async () => {
      const seen: { hook: string; call: unknown; result?: unknown }[] = [];
      const watch: HostHooks = {
        name: "watch",
        beforeToolCall: (p) => void seen.push({ hook: p.phase, call: p.call }),
        afterToolCall: (p) => void seen.push({ hook: p.phase, call: p.call, result: p.result }),
      };
      const run = await runHookbox({ model: c.model, replies, stream, host: { hooks: [watch] } });
      expect(run.result.status, run.result.reason).toBe("completed");
      expect(run.result.text).toBe("Order A17 totals 120.");
      expect(run.result.finishReason).toBe("stop");
      expect(run.requests).toHaveLength(2);
      const finished = ofType(run.events, "inference-finished");
      expect(finished.map((e) => e.finishReason)).toEqual(["tool-calls", "stop"]);
      expect(finished[0].toolCalls).toEqual([{ id: expect.any(String), name: "lookup_order", args: { id: "A17" } }]);
      expect(ofType(run.events, "tool-finished")).toEqual([
        expect.objectContaining({ name: "lookup_order", result: { id: "A17", total: 120 } }),
      ]);
      const firstAnswer = run.result.turn.blocks.slice(
        1,
        run.result.turn.blocks.findIndex((b) => b.kind === "tool_use"),
      );
      c.reasoning(firstAnswer.filter((b) => b.kind === "reasoning"));
      c.sentBack(run.requests[1].body);
      const call = { id: finished[0].toolCalls[0].id, name: "lookup_order", args: { id: "A17" }, origin: "host" };
      expect(seen).toEqual([
        { hook: "beforeToolCall", call },
        { hook: "afterToolCall", call, result: { id: "A17", total: 120 } },
      ]);
    });

    it("sends the same second request as the AI SDK's own loop over the same answers", async () => {
      const run = await runHookbox({ model: c.model, replies, stream });
      const sdk = await runAiSdk({ model: c.model, replies, stream, system: systemText(run), steps: 2 });
      expect(sdk).toHaveLength(2);
      expect(run.requests[0].body).toEqual(sdk[0].body);
      expect(run.requests[1].body).toEqual(sdk[1].body);
    });
  });
});

/** Parts a provider sends only when it streams (Anthropic's message_start: the message id, model and usage). */
const streamOnly = (block: { kind: string; payload: Record<string, unknown> }) =>
  block.kind === "custom" && block.payload[PayloadKeys.customKind] === "anthropic.message_start";

describe.each(cases)("$name: streamed or not", (c) => {
  it("gives the same turn (the parts a provider sends only in a stream aside)", async () => {
    const blocks = async (stream: boolean) => {
      const run = await runHookbox({ model: c.model, replies: c.files.map((file) => `${file}.${stream ? "sse" : "json"}`), stream });
      expect(run.result.status, run.result.reason).toBe("completed");
      return run.result.turn.blocks.map(({ kind, role, payload, metadata }) => ({ kind, role, payload, metadata }));
    };
    const generated = await blocks(false);
    expect(generated.length).toBeGreaterThanOrEqual(4);
    expect(generated.filter(streamOnly)).toEqual([]);
    expect((await blocks(true)).filter((block) => !streamOnly(block))).toEqual(generated);
  });
});
