import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4Usage } from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import type { JsonObject } from "../turns/json.js";
import type { Turn } from "../turns/turn.js";
import { turnToPrompt } from "./prompt.js";

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonObject;
}

export interface InferenceResult {
  text?: string;
  reasoning?: string;
  toolCalls: { id: string; name: string; args: JsonObject }[];
  finishReason: string;
  usage: { inputTokens?: number; outputTokens?: number; totalTokens?: number };
}

/** One model call through the AI SDK's LanguageModelV4 interface (any provider plugs in). */
export async function infer(
  model: LanguageModelV4,
  turn: Turn,
  options: { tools: ToolDefinition[]; signal: AbortSignal; stream?: boolean; maxOutputTokens?: number },
): Promise<InferenceResult> {
  const call: LanguageModelV4CallOptions = {
    prompt: turnToPrompt(turn),
    ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
    tools: options.tools.map((t) => ({ type: "function", name: t.name, description: t.description, inputSchema: t.parameters as never })),
    abortSignal: options.signal,
  };
  const content: LanguageModelV4Content[] = [];
  let usage: LanguageModelV4Usage | undefined;
  let finishReason = "stop";
  if (options.stream) {
    const { stream } = await model.doStream(call);
    let text = "";
    for await (const part of stream as unknown as AsyncIterable<import("@ai-sdk/provider").LanguageModelV4StreamPart>) {
      if (part.type === "text-delta") text += part.delta;
      else if (part.type === "tool-call") content.push(part);
      else if (part.type === "finish") {
        usage = part.usage;
        finishReason = part.finishReason.unified;
      } else if (part.type === "error") throw new HookboxError("ENGINE", `model stream error: ${describe(part.error)}`);
    }
    if (text) content.unshift({ type: "text", text });
  } else {
    const result = await model.doGenerate(call);
    content.push(...result.content);
    usage = result.usage;
    finishReason = result.finishReason.unified;
  }
  return collect(content, usage, finishReason);
}

function collect(content: LanguageModelV4Content[], usage: LanguageModelV4Usage | undefined, finishReason: string): InferenceResult {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const toolCalls: InferenceResult["toolCalls"] = [];
  for (const part of content) {
    if (part.type === "text") texts.push(part.text);
    else if (part.type === "reasoning") reasoning.push(part.text);
    else if (part.type === "tool-call")
      toolCalls.push({ id: part.toolCallId, name: part.toolName, args: parseArgs(part.toolName, part.input) });
  }
  const input = usage?.inputTokens.total;
  const output = usage?.outputTokens.total;
  return {
    text: texts.length ? texts.join("") : undefined,
    reasoning: reasoning.length ? reasoning.join("") : undefined,
    toolCalls,
    finishReason,
    usage: {
      ...(input !== undefined ? { inputTokens: input } : {}),
      ...(output !== undefined ? { outputTokens: output } : {}),
      ...(input !== undefined && output !== undefined ? { totalTokens: input + output } : {}),
    },
  };
}

/** A model's malformed arguments become `{}` plus a marker the argument validation reports to the model. */
function parseArgs(tool: string, input: string): JsonObject {
  if (!input.trim()) return {};
  try {
    const value: unknown = JSON.parse(input);
    if (value && typeof value === "object" && !Array.isArray(value)) return value as JsonObject;
  } catch {
    /* fall through */
  }
  return { __invalid_json__: `arguments for ${tool} are not a JSON object: ${input.slice(0, 200)}` };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
}
