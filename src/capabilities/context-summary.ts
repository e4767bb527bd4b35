import type { LanguageModelV4 } from "@ai-sdk/provider";
import type { Block } from "../turns/turn.js";
import { PayloadKeys } from "../turns/keys.gen.js";
import { readCall } from "../turns/calls.js";
import type { Summarizer } from "../loop/context-window.js";
import type { UsageMeter } from "../loop/usage-meter.js";
import type { RunTrace } from "../telemetry/run-trace.js";
import type { CapabilityLimits } from "./grants.js";
import { generateWithGuard, mostGuardUsage, type GuardRequest } from "./guard-model.js";

/*
 * Summaries of what leaves the model's context (src/loop/context-window.ts), made by the tenant's guard model
 * through the same machinery as a script's ctx.model.generate: its timeout and output cap, its tokens held
 * against the run's budget while in flight, then counted in the run's usage and priced like any inference.
 */

const INSTRUCTIONS =
  "You keep the running summary of a conversation between a user and an AI assistant that uses tools. The " +
  "assistant continues from your summary and the most recent messages, and cannot see the messages you summarize. " +
  "Keep what it needs: the user's requests and goals, decisions made, facts and figures learned from tools, names " +
  "and identifiers, and what is still open. Reply with the updated summary only, as plain text.";

/** Longest text of one message in what the guard model is shown. */
const MAX_ITEM_CHARS = 4000;

export function guardSummarizer(options: {
  guard: () => LanguageModelV4;
  limits: CapabilityLimits;
  usage: UsageMeter;
  trace: RunTrace;
}): Summarizer {
  let model: LanguageModelV4 | undefined;
  return async ({ previous, dropped, maxChars }, signal) => {
    const guard = (model ??= options.guard());
    const request: GuardRequest = {
      messages: [
        { role: "system", content: INSTRUCTIONS },
        { role: "user", content: summaryInput(previous, dropped, Math.max(maxChars * 8, MAX_ITEM_CHARS)) },
      ],
      // A token is at least a character or so: an answer longer than the room it has is cut anyway.
      maxTokens: Math.max(64, Math.ceil(maxChars / 3)),
    };
    const hold = options.usage.hold(guard.modelId, mostGuardUsage(request, options.limits.maxModelOutputTokens));
    if (typeof hold === "string") throw new Error(`no summary: ${hold}`);
    try {
      const answer = await options.trace.inference(guard.modelId, async (span) => {
        const made = await generateWithGuard(guard, request, {
          timeoutMs: options.limits.modelTimeoutMs,
          signal,
          maxOutputTokens: options.limits.maxModelOutputTokens,
        });
        span.answered(guard.modelId, made.usage);
        return made;
      });
      return { text: answer.text.trim(), model: guard.modelId, usage: options.usage.record(guard.modelId, answer.usage) };
    } finally {
      hold.release();
    }
  };
}

/** The summary so far and the messages to add to it, as text, at most `maxChars` of it. */
export function summaryInput(previous: string | undefined, dropped: readonly Block[], maxChars: number): string {
  const lines: string[] = [];
  if (previous) lines.push(`Summary so far:\n${previous}\n`);
  lines.push("Messages to add to the summary:");
  let length = lines.join("\n").length;
  for (const block of dropped) {
    const line = lineOf(block);
    if (line === undefined) continue;
    if (length + line.length + 1 > maxChars) {
      lines.push("(later messages of this part are not shown: too long)");
      break;
    }
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join("\n");
}

function lineOf(block: Block): string | undefined {
  const p = block.payload;
  switch (block.kind) {
    case "user":
      return `user: ${clip(p[PayloadKeys.text])}`;
    case "llm_text":
      return `assistant: ${clip(p[PayloadKeys.text])}`;
    case "context":
      return `context (${clip(p[PayloadKeys.restartType])}): ${clip(p[PayloadKeys.item])}`;
    case "tool_call":
    case "provider_tool_call": {
      const call = readCall(block);
      return `assistant called ${call.name} with ${clip(call.args)}`;
    }
    case "tool_use":
    case "provider_tool_result": {
      const error = p[PayloadKeys.error] ?? (p[PayloadKeys.isError] === true ? p[PayloadKeys.result] : undefined);
      const name = typeof p[PayloadKeys.name] === "string" ? p[PayloadKeys.name] : "the tool";
      return error !== undefined && error !== null ? `${name} failed: ${clip(error)}` : `${name} returned: ${clip(p[PayloadKeys.result])}`;
    }
    default:
      return undefined; // reasoning, sources, files: not needed to carry the conversation on
  }
}

function clip(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? null);
  return text.length > MAX_ITEM_CHARS ? `${text.slice(0, MAX_ITEM_CHARS)}...` : text;
}
