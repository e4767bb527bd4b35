import type { JSONValue, LanguageModelV4Prompt, SharedV4ProviderOptions } from "@ai-sdk/provider";
import { isParsedObject, type Json, type JsonObject } from "../turns/json.js";
import type { Block, Turn } from "../turns/turn.js";
import { PayloadKeys, TurnMetadataKeys } from "../turns/keys.gen.js";
import { readCall } from "../turns/calls.js";
import { foldBlocks, type AssistantPart, type PromptFold, type ToolResultPart } from "./prompt-fold.js";

type ToolOutput = ToolResultPart["output"];

const text = (value: Json | undefined): string => (typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value));

/** A block's provider metadata, sent back as the part's provider options (as generateText does). */
function options(block: Block): { providerOptions?: SharedV4ProviderOptions } {
  const metadata = block.payload[PayloadKeys.providerMetadata];
  return isParsedObject(metadata) ? { providerOptions: metadata as SharedV4ProviderOptions } : {};
}

/** A tool's value as the model reads it: text as text, anything else as JSON (generateText's rule). */
function output(value: Json | undefined): ToolOutput {
  return typeof value === "string" ? { type: "text", value } : { type: "json", value: (value ?? null) as JSONValue };
}

/** The assistant part a block of a model answer becomes; undefined for blocks that are not sent back. */
function assistantPart(block: Block, toolNames: Map<string, string>): AssistantPart | undefined {
  const p = block.payload;
  switch (block.kind) {
    case "llm_text":
      // An empty text part without metadata carries nothing; the AI SDK drops it too.
      if (text(p[PayloadKeys.text]) === "" && options(block).providerOptions === undefined) return undefined;
      return { type: "text", text: text(p[PayloadKeys.text]), ...options(block) };
    case "reasoning":
      return { type: "reasoning", text: text(p[PayloadKeys.text]), ...options(block) };
    case "tool_call":
    case "provider_tool_call": {
      const call = readCall(block);
      toolNames.set(call.id, call.name);
      return {
        type: "tool-call",
        toolCallId: call.id,
        toolName: call.name,
        input: call.args,
        ...(block.kind === "provider_tool_call" ? { providerExecuted: true } : {}),
        ...options(block),
      };
    }
    case "provider_tool_result": {
      const result = p[PayloadKeys.result] ?? null;
      return {
        type: "tool-result",
        toolCallId: text(p[PayloadKeys.id]),
        toolName: text(p[PayloadKeys.name]),
        output: p[PayloadKeys.isError] === true ? { type: "error-json", value: result as JSONValue } : output(result),
        ...options(block),
      };
    }
    case "file": {
      const url = p[PayloadKeys.url];
      const data =
        typeof url === "string" ? { type: "url" as const, url: new URL(url) } : { type: "data" as const, data: text(p[PayloadKeys.data]) };
      const mediaType = text(p[PayloadKeys.mediaType]);
      if (p[PayloadKeys.reasoning] === true) return { type: "reasoning-file", data, mediaType, ...options(block) };
      return { type: "file", data, mediaType, ...options(block) };
    }
    case "custom":
      return { type: "custom", kind: text(p[PayloadKeys.customKind]) as `${string}.${string}`, ...options(block) };
    default:
      return undefined;
  }
}

/** A host-run call's result (or error) as the tool message part generateText sends for it. */
function toolResult(block: Block, toolNames: Map<string, string>): ToolResultPart {
  const p = block.payload;
  const id = text(p[PayloadKeys.id]);
  const error = p[PayloadKeys.error];
  return {
    type: "tool-result",
    toolCallId: id,
    toolName: typeof p[PayloadKeys.name] === "string" ? (p[PayloadKeys.name] as string) : (toolNames.get(id) ?? "unknown"),
    output:
      error !== undefined && error !== null
        ? { type: "error-text", value: isParsedObject(error) && typeof error.message === "string" ? error.message : text(error) }
        : output(p[PayloadKeys.result]),
  };
}

const ASSISTANT_KINDS = new Set(["llm_text", "reasoning", "tool_call", "provider_tool_call", "provider_tool_result", "file", "custom"]);

/**
 * Turns a Turn into the AI SDK prompt, as generateText builds the next call's prompt from the steps before it
 * (its toResponseMessages and convertToLanguageModelPrompt): each model answer is one assistant message with
 * every part in order and its provider metadata as provider options (reasoning with its signature or
 * encrypted content, provider-run calls with their results); host-run results follow in one tool message;
 * sources are not sent.
 *
 * System text goes first, where every provider accepts it: the run's instructions (`system`, first, where
 * generateText puts its `system` option), then what the tenant lets the model see of the user context (by
 * default the user's original request, on every call, so the model always sees the unabridged request; never a
 * timestamp, so the prefix stays the same from call to call), then the turn's system blocks. A context
 * restart's enrichment belongs to the conversation where it happened, so it is a user message there: Gemini
 * and Anthropic refuse a system message after the conversation has started.
 *
 * The blocks are folded into messages once: blocks are immutable once in a turn, so the fold of a turn's
 * blocks is kept (keyed by its first block, src/engine/prompt-fold.ts) and the next call, of this run or the
 * session's next, folds only the blocks added since. A turn that does not continue the kept fold is folded anew.
 */
export function turnToPrompt(turn: Turn): LanguageModelV4Prompt {
  const folded = foldBlocks(turn.blocks, foldBlock);
  const instructions = TurnMetadataKeys.system.find(turn.metadata);
  const userContext = TurnMetadataKeys.modelContext.find(turn.metadata);
  return [
    ...(instructions ? [{ role: "system" as const, content: instructions }] : []),
    ...(userContext
      ? [{ role: "system" as const, content: `The user's original request (user context): ${JSON.stringify(userContext)}` }]
      : []),
    ...folded.system,
    ...folded.messages,
  ];
}

/** One block into the fold: the same rules, in order, as a walk over the whole turn would apply. */
function foldBlock(fold: PromptFold, block: Block): void {
  const p = block.payload;
  if (ASSISTANT_KINDS.has(block.kind)) {
    if (fold.tool.length) fold.flush();
    const part = assistantPart(block, fold.toolNames);
    if (part) fold.assistant.push(part);
    return;
  }
  switch (block.kind) {
    case "system":
      fold.system.push({ role: "system", content: text(p[PayloadKeys.text]) });
      break;
    case "context":
      fold.flush();
      fold.messages.push({ role: "user", content: [{ type: "text", text: contextText(p) }] });
      break;
    case "user":
      fold.flush();
      fold.messages.push({ role: "user", content: [{ type: "text", text: text(p[PayloadKeys.text]) }] });
      break;
    case "tool_use":
      fold.flushAssistant();
      fold.tool.push(toolResult(block, fold.toolNames));
      break;
    default:
      break; // sources are for readers, not for the model; unknown kinds are not sent
  }
}

function contextText(payload: JsonObject): string {
  return `Context (${text(payload[PayloadKeys.restartType])}): ${text(payload[PayloadKeys.item])}`;
}
