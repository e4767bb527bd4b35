import type { LanguageModelV4Message, LanguageModelV4Prompt } from "@ai-sdk/provider";
import type { Json } from "../turns/json.js";
import type { Turn } from "../turns/turn.js";
import { PayloadKeys, TurnMetadataKeys } from "../turns/keys.gen.js";

type AssistantPart = Extract<LanguageModelV4Message, { role: "assistant" }>["content"][number];
type ToolResultPart = Extract<LanguageModelV4Message, { role: "tool" }>["content"][number];

const text = (value: Json | undefined): string => (typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value));

/**
 * Turns a Turn into the AI SDK prompt. The user's original request (user context) goes in as a
 * system message on every call, so the model always sees the unabridged request.
 */
export function turnToPrompt(turn: Turn): LanguageModelV4Prompt {
  const messages: LanguageModelV4Message[] = [];
  const userContext = TurnMetadataKeys.userContext.find(turn.metadata);
  if (userContext) {
    messages.push({ role: "system", content: `The user's original request (user context): ${JSON.stringify(userContext)}` });
  }
  let assistant: AssistantPart[] | undefined;
  let tool: ToolResultPart[] | undefined;
  const flush = () => {
    if (assistant?.length) messages.push({ role: "assistant", content: assistant });
    if (tool?.length) messages.push({ role: "tool", content: tool });
    assistant = undefined;
    tool = undefined;
  };
  const toolNames = new Map<string, string>();
  for (const block of turn.blocks) {
    const p = block.payload;
    switch (block.kind) {
      case "system":
        flush();
        messages.push({ role: "system", content: text(p[PayloadKeys.text]) });
        break;
      case "context":
        flush();
        messages.push({ role: "system", content: `Context (${text(p[PayloadKeys.restartType])}): ${text(p[PayloadKeys.item])}` });
        break;
      case "user":
        flush();
        messages.push({ role: "user", content: [{ type: "text", text: text(p[PayloadKeys.text]) }] });
        break;
      case "llm_text":
        if (tool) flush();
        (assistant ??= []).push({ type: "text", text: text(p[PayloadKeys.text]) });
        break;
      case "tool_call": {
        if (tool) flush();
        const id = text(p[PayloadKeys.id]);
        toolNames.set(id, text(p[PayloadKeys.name]));
        (assistant ??= []).push({
          type: "tool-call",
          toolCallId: id,
          toolName: text(p[PayloadKeys.name]),
          input: p[PayloadKeys.args] ?? {},
        });
        break;
      }
      case "tool_use": {
        if (assistant?.length) {
          messages.push({ role: "assistant", content: assistant });
          assistant = undefined;
        }
        const id = text(p[PayloadKeys.id]);
        const error = p[PayloadKeys.error];
        (tool ??= []).push({
          type: "tool-result",
          toolCallId: id,
          toolName: toolNames.get(id) ?? "unknown",
          output:
            error !== undefined && error !== null
              ? { type: "error-text", value: text(error) }
              : { type: "json", value: p[PayloadKeys.result] ?? null },
        });
        break;
      }
      default:
        break; // reasoning and other blocks are not replayed to the model
    }
  }
  flush();
  return messages;
}
