import type { LanguageModelV4Content, SharedV4ProviderMetadata } from "@ai-sdk/provider";
import type { Json, JsonObject } from "../turns/json.js";
import { PayloadKeys, type BlockKind } from "../turns/keys.gen.js";
import { parseCallArguments } from "../turns/calls.js";

/*
 * One model answer (the AI SDK's content parts, streamed or not) as turn blocks, one block per part, in the
 * provider's order, each with the provider's metadata: what the provider needs back (reasoning signatures,
 * encrypted content, thought signatures, item ids) and what a reader wants (sources, citations, provider-run
 * calls and their results). prompt.ts turns the blocks back into what the AI SDK's own generateText sends.
 */

/** What an answer block is built from: kind, role and payload (the caller gives ids and block metadata). */
export interface AnswerBlock {
  kind: BlockKind;
  role: "assistant";
  payload: JsonObject;
}

function withMetadata(payload: JsonObject, metadata: SharedV4ProviderMetadata | undefined): JsonObject {
  if (metadata !== undefined && Object.keys(metadata).length > 0) payload[PayloadKeys.providerMetadata] = toJson(metadata) as JsonObject;
  return payload;
}

/** Provider metadata and results are JSON by the spec; a round trip drops `undefined` fields and rejects nothing else. */
function toJson(value: unknown): Json {
  return value === undefined ? null : (JSON.parse(JSON.stringify(value)) as Json);
}

/** The call's arguments as the turn keeps them: an object, or `{}` with the text the model sent in `raw_args`. */
function callPayload(part: { toolCallId: string; toolName: string; input: string }): JsonObject {
  const parsed = parseCallArguments(part.input);
  return {
    [PayloadKeys.id]: part.toolCallId,
    [PayloadKeys.name]: part.toolName,
    [PayloadKeys.args]: parsed.args,
    ...(parsed.rawArgs !== undefined ? { [PayloadKeys.rawArgs]: parsed.rawArgs } : {}),
  };
}

function fileData(data: Extract<LanguageModelV4Content, { type: "file" }>["data"]): JsonObject {
  if (data.type === "url") return { [PayloadKeys.url]: data.url.toString() };
  const bytes = data.data;
  return { [PayloadKeys.data]: typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("base64") };
}

/** One content part as a block; undefined for parts that are not kept (a provider's approval request). */
export function answerBlock(part: LanguageModelV4Content): AnswerBlock | undefined {
  const block = (kind: BlockKind, payload: JsonObject): AnswerBlock => ({ kind, role: "assistant", payload });
  switch (part.type) {
    case "text":
      return block(
        "llm_text",
        withMetadata(
          { [PayloadKeys.text]: part.text, ...(part.citations?.length ? { [PayloadKeys.citations]: toJson(part.citations) } : {}) },
          part.providerMetadata,
        ),
      );
    case "reasoning":
      return block("reasoning", withMetadata({ [PayloadKeys.text]: part.text }, part.providerMetadata));
    case "tool-call":
      if (part.providerExecuted) {
        const payload = callPayload(part);
        if (part.dynamic) payload[PayloadKeys.dynamic] = true;
        return block("provider_tool_call", withMetadata(payload, part.providerMetadata));
      }
      return block("tool_call", withMetadata(callPayload(part), part.providerMetadata));
    case "tool-result":
      return block(
        "provider_tool_result",
        withMetadata(
          {
            [PayloadKeys.id]: part.toolCallId,
            [PayloadKeys.name]: part.toolName,
            [PayloadKeys.result]: toJson(part.result),
            ...(part.isError ? { [PayloadKeys.isError]: true } : {}),
            ...(part.dynamic ? { [PayloadKeys.dynamic]: true } : {}),
          },
          part.providerMetadata,
        ),
      );
    case "source":
      return block(
        "source",
        withMetadata(
          part.sourceType === "url"
            ? {
                [PayloadKeys.sourceType]: "url",
                [PayloadKeys.id]: part.id,
                [PayloadKeys.url]: part.url,
                ...(part.title !== undefined ? { [PayloadKeys.title]: part.title } : {}),
              }
            : {
                [PayloadKeys.sourceType]: "document",
                [PayloadKeys.id]: part.id,
                [PayloadKeys.mediaType]: part.mediaType,
                [PayloadKeys.title]: part.title,
                ...(part.filename !== undefined ? { [PayloadKeys.filename]: part.filename } : {}),
              },
          part.providerMetadata,
        ),
      );
    case "file":
    case "reasoning-file":
      return block(
        "file",
        withMetadata(
          {
            [PayloadKeys.mediaType]: part.mediaType,
            ...fileData(part.data),
            ...(part.type === "reasoning-file" ? { [PayloadKeys.reasoning]: true } : {}),
          },
          part.providerMetadata,
        ),
      );
    case "custom":
      return block("custom", withMetadata({ [PayloadKeys.customKind]: part.kind }, part.providerMetadata));
    default:
      // tool-approval-request: provider-run tools that wait for an approval are not supported (docs/loop.md).
      return undefined;
  }
}
