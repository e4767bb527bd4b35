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
import { TurnMetadataKeys, type FinishReason } from "../turns/keys.gen.js";
import { callSettings } from "./model-settings.js";
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
  /** A streamed answer's text as it arrives, piece by piece (live readers' `text-delta` events). */
  onTextDelta?: (delta: string) => void;
  /** Caps the answer whatever the turn's model settings say (the guard model's bound). */
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
  const tools = [...functionTools, ...providerTools];
  const call: LanguageModelV4CallOptions = {
    prompt: turnToPrompt(turn),
    ...callSettings(
      turnSettings(turn),
      tools.map((tool) => tool.name),
    ),
    ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
    tools,
    abortSignal: options.signal,
  };
  const answer = options.stream
    ? await collectStream((await model.doStream(call)).stream, options.signal, options.onTextDelta)
    : await model.doGenerate(call);
  const approval = answer.content.find((part) => part.type === "tool-approval-request");
  if (approval) {
    throw new HookboxError(
      "MODEL",
      `model ${model.provider}:${model.modelId} asked for an approval of a provider-run call (${approval.toolCallId}): hookbox does not answer provider tool approvals; configure the provider tool without approval`,
    );
  }
  return result(answer.content, answer.usage, answer.finishReason);
}

/** The settings in the turn (a middleware may have changed them); malformed ones are MODEL_SETTINGS, never sent. */
function turnSettings(turn: Turn) {
  try {
    return TurnMetadataKeys.modelSettings.find(turn.metadata);
  } catch (error) {
    throw new HookboxError("MODEL_SETTINGS", `the turn's model settings are malformed: ${(error as Error).message}`);
  }
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
