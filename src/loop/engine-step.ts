import type { LanguageModelV4 } from "@ai-sdk/provider";
import type { Turn, Block } from "../turns/turn.js";
import { BlockMetadataKeys, PayloadKeys, TurnMetadataKeys } from "../turns/keys.gen.js";
import { infer, type ToolDefinition } from "../engine/infer.js";
import type { UserContext } from "../contracts/context.js";
import type { Middleware } from "./middleware-chain.js";
import { newId } from "./ids.js";

/** The innermost link: one model call; the answer is appended as blocks to a copy of the turn. */
export function engineStep(options: { model: LanguageModelV4; tools: () => ToolDefinition[]; signal: AbortSignal; stream?: boolean }) {
  return async (turn: Turn): Promise<Turn> => {
    const result = await infer(options.model, turn, { tools: options.tools(), signal: options.signal, stream: options.stream });
    const blocks: Block[] = [];
    if (result.reasoning)
      blocks.push({
        id: newId("blk"),
        kind: "reasoning",
        role: "assistant",
        payload: { [PayloadKeys.text]: result.reasoning },
        metadata: {},
      });
    if (result.text !== undefined) {
      blocks.push({
        id: newId("blk"),
        kind: "llm_text",
        role: "assistant",
        payload: { [PayloadKeys.text]: result.text },
        metadata: { [BlockMetadataKeys.toolCalls.id]: result.toolCalls.length },
      });
    }
    for (const call of result.toolCalls) {
      blocks.push({
        id: newId("blk"),
        kind: "tool_call",
        role: "assistant",
        payload: { [PayloadKeys.id]: call.id, [PayloadKeys.name]: call.name, [PayloadKeys.args]: call.args },
        metadata: {},
      });
    }
    const next: Turn = { ...turn, blocks: [...turn.blocks, ...blocks], metadata: { ...turn.metadata } };
    TurnMetadataKeys.usage.set(next.metadata, result.usage);
    TurnMetadataKeys.stopReason.set(next.metadata, result.finishReason);
    TurnMetadataKeys.model.set(next.metadata, `${options.model.provider}:${options.model.modelId}`);
    return next;
  };
}

/**
 * Built in, innermost (next to the engine) so no script middleware can strip it: writes the user's
 * original request into the turn metadata of every model call; the prompt builder shows it to the model.
 */
export function userContextMiddleware(userContext: UserContext): Middleware {
  return {
    name: "hookbox/user-context",
    origin: "host",
    run: (turn, next) => {
      const metadata = { ...turn.metadata };
      TurnMetadataKeys.userContext.set(metadata, userContext as never);
      return next({ ...turn, metadata });
    },
  };
}
