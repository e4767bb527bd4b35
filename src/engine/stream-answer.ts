import type {
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
  SharedV4ProviderMetadata,
} from "@ai-sdk/provider";
import { brokenStreamError, ModelStreamError, streamPartError } from "./stream-error.js";

export interface StreamedAnswer {
  content: LanguageModelV4Content[];
  finishReason: LanguageModelV4FinishReason;
  usage?: LanguageModelV4Usage;
}

type TextPart = Extract<LanguageModelV4Content, { type: "text" | "reasoning" }>;

/**
 * Reads a streamed answer into the content parts doGenerate would have returned, as the AI SDK's streamText
 * collects them: text and reasoning parts by their id, each where it started, with the last provider metadata
 * any of its chunks carried (Anthropic sends a thinking signature on a late delta, OpenAI the encrypted
 * reasoning on the end); every other part as it comes. `onTextDelta` hears each piece of answer text as it
 * arrives (live readers show it; the collected answer is what the turn keeps). An error part, a broken stream or a stream without its
 * finish throws a ModelStreamError, so a partial answer never reaches the turn.
 */
export async function collectStream(
  stream: ReadableStream<LanguageModelV4StreamPart>,
  signal: AbortSignal,
  onTextDelta?: (delta: string) => void,
): Promise<StreamedAnswer> {
  const content: LanguageModelV4Content[] = [];
  const open = { text: new Map<string, TextPart>(), reasoning: new Map<string, TextPart>() };
  let finish: { finishReason: LanguageModelV4FinishReason; usage: LanguageModelV4Usage } | undefined;
  const upsert = (type: "text" | "reasoning", id: string, delta: string | undefined, metadata: SharedV4ProviderMetadata | undefined) => {
    const part: TextPart = open[type].get(id) ?? { type, text: "" };
    if (!open[type].has(id)) {
      content.push(part);
      open[type].set(id, part);
    }
    if (delta !== undefined) part.text += delta;
    if (metadata !== undefined) part.providerMetadata = metadata;
    return part;
  };
  const reader = stream.getReader();
  let ended = false;
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        if (signal.aborted) throw error;
        throw brokenStreamError(error);
      }
      if (next.done) {
        ended = true;
        break;
      }
      const part = next.value;
      switch (part.type) {
        case "text-start":
        case "reasoning-start":
          upsert(part.type === "text-start" ? "text" : "reasoning", part.id, undefined, part.providerMetadata);
          break;
        case "text-delta":
          upsert("text", part.id, part.delta, part.providerMetadata);
          if (part.delta) onTextDelta?.(part.delta);
          break;
        case "reasoning-delta":
          upsert("reasoning", part.id, part.delta, part.providerMetadata);
          break;
        case "text-end": {
          const text = upsert("text", part.id, undefined, part.providerMetadata);
          if (part.citations?.length) (text as Extract<TextPart, { type: "text" }>).citations = part.citations;
          open.text.delete(part.id);
          break;
        }
        case "reasoning-end":
          upsert("reasoning", part.id, undefined, part.providerMetadata);
          open.reasoning.delete(part.id);
          break;
        case "tool-call":
        case "tool-result":
        case "tool-approval-request":
        case "source":
        case "file":
        case "reasoning-file":
        case "custom":
          content.push(part);
          break;
        case "finish":
          finish = { finishReason: part.finishReason, usage: part.usage };
          break;
        case "error":
          throw streamPartError(part.error);
        default:
          break; // stream-start, response-metadata, tool-input-*, raw, ping: nothing the turn keeps
      }
    }
  } finally {
    // An answer given up on (an error part, a cancelled run) frees its connection.
    if (!ended) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  if (!finish || finish.finishReason.unified === "interrupted") {
    throw new ModelStreamError("the stream ended before the answer was complete", undefined, true);
  }
  return { content, finishReason: finish.finishReason, usage: finish.usage };
}
