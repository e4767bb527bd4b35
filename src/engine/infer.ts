import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FunctionTool,
  LanguageModelV4ProviderTool,
  LanguageModelV4Usage,
} from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import type { JsonObject } from "../turns/json.js";
import type { Turn } from "../turns/turn.js";
import type { FinishReason } from "../turns/keys.gen.js";
import { turnToPrompt } from "./prompt.js";
import { collectStream } from "./stream-answer.js";

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonObject;
}

/**
 * A tool the provider runs itself (OpenAI's web_search, Anthropic's web_fetch), keyed by the name the model
 * calls it by: the objects the provider packages make (`openai.tools.webSearch({})`), as generateText takes them.
 */
export type ProviderTools = Record<string, { type: "provider"; id: `${string}.${string}`; args: Record<string, unknown> }>;

export interface InferenceResult {
  /** Every part of the answer, in the provider's order, with its provider metadata (answer-blocks.ts keeps them). */
  content: LanguageModelV4Content[];
  /** The answer's text parts joined (undefined when it has none). */
  text?: string;
  finishReason: FinishReason;
  /** The provider's own finish reason (`end_turn`, `refusal`, `STOP`, ...). */
  rawFinishReason?: string;
  usage: { inputTokens?: number; outputTokens?: number; totalTokens?: number };
}

export interface InferOptions {
  tools: ToolDefinition[];
  providerTools?: ProviderTools;
  signal: AbortSignal;
  stream?: boolean;
  maxOutputTokens?: number;
}

/**
 * One model call through the AI SDK's LanguageModelV4 interface (any provider plugs in). Streamed or not, the
 * answer is the same list of content parts.
 */
export async function infer(model: LanguageModelV4, turn: Turn, options: InferOptions): Promise<InferenceResult> {
  const functionTools = options.tools.map((t): LanguageModelV4FunctionTool => ({
    type: "function",
    name: t.name,
    description: t.description,
    inputSchema: t.parameters as never,
  }));
  const providerTools = Object.entries(options.providerTools ?? {}).map(([name, tool]): LanguageModelV4ProviderTool => ({
    type: "provider",
    name,
    id: tool.id,
    args: tool.args,
  }));
  const call: LanguageModelV4CallOptions = {
    prompt: turnToPrompt(turn),
    ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
    tools: [...functionTools, ...providerTools],
    // What generateText sends when no tool choice is given, so a provider sees the same request from both.
    toolChoice: { type: "auto" },
    abortSignal: options.signal,
  };
  const answer = options.stream ? await collectStream((await model.doStream(call)).stream, options.signal) : await model.doGenerate(call);
  const approval = answer.content.find((part) => part.type === "tool-approval-request");
  if (approval) {
    throw new HookboxError(
      "MODEL",
      `model ${model.provider}:${model.modelId} asked for an approval of a provider-run call (${approval.toolCallId}): hookbox does not answer provider tool approvals; configure the provider tool without approval`,
    );
  }
  return result(answer.content, answer.usage, answer.finishReason);
}

function result(
  content: LanguageModelV4Content[],
  usage: LanguageModelV4Usage | undefined,
  finishReason: { unified: FinishReason; raw: string | undefined },
): InferenceResult {
  const texts = content.flatMap((part) => (part.type === "text" ? [part.text] : []));
  const input = usage?.inputTokens.total;
  const output = usage?.outputTokens.total;
  return {
    content,
    text: texts.length ? texts.join("") : undefined,
    finishReason: finishReason.unified,
    ...(finishReason.raw !== undefined ? { rawFinishReason: finishReason.raw } : {}),
    usage: {
      ...(input !== undefined ? { inputTokens: input } : {}),
      ...(output !== undefined ? { outputTokens: output } : {}),
      ...(input !== undefined && output !== undefined ? { totalTokens: input + output } : {}),
    },
  };
}
