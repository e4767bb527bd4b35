import { describe, expect, it } from "vitest";
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { guardSummarizer, summaryInput } from "../../src/capabilities/context-summary.js";
import { DEFAULT_CAPABILITY_LIMITS, type CapabilityLimits } from "../../src/capabilities/grants.js";
import { ScriptedModel, type ScriptedStep } from "../../src/engine/scripted.js";
import { UsageMeter } from "../../src/loop/usage-meter.js";
import { noopRunTrace, type RunTrace } from "../../src/telemetry/run-trace.js";
import type { Block } from "../../src/turns/turn.js";
import type { JsonObject } from "../../src/turns/json.js";

/*
 * Summaries of what leaves the model's context (docs/loop.md, "The model's context"), in the test's own process:
 * what the guard model is shown of the left-out messages, and the call itself with the same bounds as
 * ctx.model.generate (its output cap, its hold on the run's budget, its tokens in the run's usage).
 */

let ids = 0;
const block = (kind: Block["kind"], payload: JsonObject): Block => ({ id: `blk_${++ids}`, kind, payload, metadata: {} });

describe("summaryInput: the left-out messages as the guard model reads them", () => {
  it("each kind of message as a line, after the summary so far; reasoning and other blocks are left out", () => {
    const dropped = [
      block("user", { text: "refund order A17" }),
      block("reasoning", { text: "thinking" }),
      block("llm_text", { text: "Looking it up." }),
      block("tool_call", { id: "c1", name: "lookup", args: { id: "A17" } }),
      block("tool_use", { id: "c1", name: "lookup", result: { total: 120 } }),
      block("tool_use", { id: "c2", name: "refund", error: "over the limit" }),
      block("tool_use", { id: "c3", result: "denied by policy", is_error: true }),
      block("tool_use", { id: "c4", name: "note", result: null, error: null }),
      block("provider_tool_call", { id: "p1", name: "web_search", args: { query: "A17" } }),
      block("provider_tool_result", { id: "p1", name: "web_search", result: ["hit"] }),
      block("context", { restart_type: "trimmed", item: "3 earlier messages were left out" }),
      block("source", { url: "https://example.com/" }),
      block("system", { text: "be brief" }),
    ];
    expect(summaryInput("the user wants a refund", dropped, 10_000)).toBe(
      [
        "Summary so far:\nthe user wants a refund\n",
        "Messages to add to the summary:",
        "user: refund order A17",
        "assistant: Looking it up.",
        'assistant called lookup with {"id":"A17"}',
        'lookup returned: {"total":120}',
        "refund failed: over the limit",
        "the tool failed: denied by policy",
        "note returned: null",
        'assistant called web_search with {"query":"A17"}',
        'web_search returned: ["hit"]',
        "context (trimmed): 3 earlier messages were left out",
      ].join("\n"),
    );
  });

  it("without a summary so far it starts with the messages; an empty one counts as none", () => {
    const dropped = [block("user", { text: "hi" })];
    expect(summaryInput(undefined, dropped, 1000)).toBe("Messages to add to the summary:\nuser: hi");
    expect(summaryInput("", dropped, 1000)).toBe("Messages to add to the summary:\nuser: hi");
  });

  it("a message's text is cut at 4000 characters", () => {
    const long = "x".repeat(4001);
    expect(summaryInput(undefined, [block("user", { text: long })], 100_000)).toBe(
      `Messages to add to the summary:\nuser: ${"x".repeat(4000)}...`,
    );
    expect(summaryInput(undefined, [block("user", { text: "y".repeat(4000) })], 100_000)).toBe(
      `Messages to add to the summary:\nuser: ${"y".repeat(4000)}`,
    );
    const args = { blob: "z".repeat(5000) };
    expect(summaryInput(undefined, [block("tool_call", { id: "c", name: "t", args })], 100_000)).toBe(
      `Messages to add to the summary:\nassistant called t with ${JSON.stringify(args).slice(0, 4000)}...`,
    );
  });

  it("at most maxChars: the messages that do not fit are left out, saying so", () => {
    const header = "Messages to add to the summary:";
    const dropped = [block("user", { text: "a".repeat(10) }), block("user", { text: "b".repeat(10) }), block("user", { text: "c" })];
    const line = "user: aaaaaaaaaa";
    // Exactly room for the header and the first line (and its newline).
    expect(summaryInput(undefined, dropped, header.length + line.length + 1)).toBe(
      `${header}\n${line}\n(later messages of this part are not shown: too long)`,
    );
    // One character less: not even the first.
    expect(summaryInput(undefined, dropped, header.length + line.length)).toBe(
      `${header}\n(later messages of this part are not shown: too long)`,
    );
    // Room for both lines exactly, each counted with its newline.
    const second = "user: bbbbbbbbbb";
    expect(summaryInput(undefined, dropped.slice(0, 2), header.length + line.length + second.length + 2)).toBe(
      `${header}\n${line}\n${second}`,
    );
    expect(summaryInput(undefined, dropped.slice(0, 2), header.length + line.length + second.length + 1)).toBe(
      `${header}\n${line}\n(later messages of this part are not shown: too long)`,
    );
    // The summary so far counts too, with the newlines around it.
    const previous = "Summary so far:\nP\n";
    expect(summaryInput("P", dropped.slice(0, 1), previous.length + 1 + header.length + line.length + 1)).toBe(
      `${previous}\n${header}\n${line}`,
    );
    expect(summaryInput("P", dropped.slice(0, 1), previous.length + header.length + line.length + 1)).toBe(
      `${previous}\n${header}\n(later messages of this part are not shown: too long)`,
    );
    // Later messages are not tried once one did not fit, even a short one.
    expect(summaryInput(undefined, dropped, header.length + line.length + 5)).not.toContain("user: c");
  });
});

/** A guard summarizer over `steps`, with the run's usage meter; `model.calls` is what the guard model was asked. */
function summarizer(steps: ScriptedStep[], settings: { maxTokens?: number; limits?: Partial<CapabilityLimits>; trace?: RunTrace } = {}) {
  const model = new ScriptedModel(steps, "guard-s");
  let made = 0;
  const usage = new UsageMeter({
    ...(settings.maxTokens !== undefined ? { maxTokens: settings.maxTokens } : {}),
    pricing: { "guard-s": { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000 } },
  });
  const summarize = guardSummarizer({
    guard: () => (made++, model),
    limits: { ...DEFAULT_CAPABILITY_LIMITS, ...settings.limits },
    usage,
    trace: settings.trace ?? noopRunTrace({}),
  });
  return { summarize, usage, model, made: () => made };
}

const textOf = (call: LanguageModelV4CallOptions) =>
  call.prompt.map((message) => [
    message.role,
    typeof message.content === "string" ? message.content : message.content.map((part) => ("text" in part ? part.text : "")).join(""),
  ]);

describe("guardSummarizer: a summary by the tenant's guard model", () => {
  const dropped = [block("user", { text: "refund A17" }), block("llm_text", { text: "Refunded 120." })];

  it("asks with the instructions and the messages, answers the trimmed text, the model and the usage counted in the run's", async () => {
    const guard = summarizer([{ text: "  The user got A17 refunded (120).\n", usage: { inputTokens: 50, outputTokens: 9 } }]);
    const summary = await guard.summarize({ previous: "earlier", dropped, maxChars: 600 }, new AbortController().signal);
    expect(summary).toEqual({
      text: "The user got A17 refunded (120).",
      model: "guard-s",
      usage: { inputTokens: 50, outputTokens: 9, costUsd: 59 },
    });
    expect(guard.usage.total).toEqual({ inputTokens: 50, outputTokens: 9, costUsd: 59 });
    const [system, user] = textOf(guard.model.calls[0]);
    expect(system[0]).toBe("system");
    expect(system[1]).toMatch(/^You keep the running summary of a conversation between a user and an AI assistant that uses tools\. /);
    expect(system[1]).toMatch(/Reply with the updated summary only, as plain text\.$/);
    expect(user).toEqual(["user", summaryInput("earlier", dropped, 4800)]);
    // An answer at most about maxChars long: a third of it in tokens.
    expect(guard.model.calls[0].maxOutputTokens).toBe(200);
  });

  it("its output cap: at least 64 tokens, at most the tenant's maxModelOutputTokens", async () => {
    const guard = summarizer([{ text: "a" }, { text: "b" }, { text: "c" }], { limits: { maxModelOutputTokens: 1000 } });
    const signal = new AbortController().signal;
    await guard.summarize({ dropped, maxChars: 30 }, signal);
    await guard.summarize({ dropped, maxChars: 2000 }, signal);
    await guard.summarize({ dropped, maxChars: 3001 }, signal);
    expect(guard.model.calls.map((call) => call.maxOutputTokens)).toEqual([64, 667, 1000]);
    // The messages it is shown: at least 4000 characters' worth, else eight times the room of the summary.
    expect(textOf(guard.model.calls[0])[1][1]).toBe(summaryInput(undefined, dropped, 4000));
    expect(guard.made()).toBe(1);
  });

  it("shows the guard model eight times the summary's room of messages, and never less than 4000 characters", async () => {
    // Eleven messages of 406 characters: 4,466 characters in all.
    const many = Array.from({ length: 11 }, (_, index) => block("user", { text: `${index}`.padEnd(400, ".") }));
    const guard = summarizer([{ text: "a" }, { text: "b" }]);
    const signal = new AbortController().signal;
    await guard.summarize({ dropped: many, maxChars: 600 }, signal);
    await guard.summarize({ dropped: many, maxChars: 30 }, signal);
    const [wide, narrow] = guard.model.calls.map((call) => textOf(call)[1][1]);
    expect(wide).toBe(summaryInput(undefined, many, 4800));
    expect(wide).not.toContain("not shown");
    expect(narrow).toBe(summaryInput(undefined, many, 4000));
    expect(narrow).toContain("(later messages of this part are not shown: too long)");
  });

  it("holds what it may spend while in flight: refused when the run's budget has no room, and gives it back after", async () => {
    const guard = summarizer([{ text: "s1", delayMs: 50, usage: { inputTokens: 10, outputTokens: 10 } }, { text: "s2" }], {
      maxTokens: 100,
    });
    const signal = new AbortController().signal;
    const first = guard.summarize({ dropped, maxChars: 300 }, signal);
    // While the first is in flight it holds more than the budget: the second is refused, naming the limit.
    await expect(guard.summarize({ dropped, maxChars: 300 }, signal)).rejects.toThrow(
      /^no summary: the run used 0 tokens, and calls in flight may use \d+ more, past its limit maxTokens \(100\)$/,
    );
    await first;
    // Answered: only the 20 spent tokens count now.
    expect(await guard.summarize({ dropped, maxChars: 300 }, signal)).toMatchObject({ text: "s2" });
    expect(guard.usage.tokensUsed).toBe(20);
  });

  it("a failing guard model gives back what it held", async () => {
    const guard = summarizer([{ text: "only" }], { maxTokens: 5000 });
    const signal = new AbortController().signal;
    await guard.summarize({ dropped, maxChars: 300 }, signal);
    await expect(guard.summarize({ dropped, maxChars: 300 }, signal)).rejects.toMatchObject({ code: "CAPABILITY_FAILED" });
    // Nothing is held any more: a hold of the whole budget is admitted.
    const hold = guard.usage.hold("guard-s", { inputTokens: 0, outputTokens: 5000 });
    expect(typeof hold).toBe("object");
  });

  it("is an inference of the run's trace, with the model's tokens", async () => {
    const spans: string[] = [];
    const trace: RunTrace = {
      ...noopRunTrace({}),
      inference: (model, work) => (
        spans.push(`start ${model}`),
        work({ answered: (answered, usage) => spans.push(`${answered} ${usage.inputTokens}+${usage.outputTokens}`), retried() {} })
      ),
    };
    const guard = summarizer([{ text: "s", usage: { inputTokens: 3, outputTokens: 4 } }], { trace });
    await guard.summarize({ dropped, maxChars: 300 }, new AbortController().signal);
    expect(spans).toEqual(["start guard-s", "guard-s 3+4"]);
  });

  it("its timeout is the tenant's modelTimeoutMs, and the run's signal cancels it", async () => {
    const slow = summarizer([{ text: "late", delayMs: 30_000 }], { limits: { modelTimeoutMs: 50 } });
    await expect(slow.summarize({ dropped, maxChars: 300 }, new AbortController().signal)).rejects.toMatchObject({
      code: "CAPABILITY_TIMEOUT",
      message: "ctx.model.generate: the guard model took longer than 50 ms",
    });
    const ended = new AbortController();
    const guard = summarizer([{ text: "late", delayMs: 30_000 }]);
    const pending = guard.summarize({ dropped, maxChars: 300 }, ended.signal);
    setTimeout(() => ended.abort(), 20);
    await expect(pending).rejects.toMatchObject({ code: "CANCELLED" });
  });
});
