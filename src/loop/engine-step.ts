import type { LanguageModelV4 } from "@ai-sdk/provider";
import type { Turn, Block } from "../turns/turn.js";
import { BlockMetadataKeys, TurnMetadataKeys, type FinishReason } from "../turns/keys.gen.js";
import { infer, type InferenceResult, type ProviderTools, type ToolDefinition } from "../engine/infer.js";
import { answerBlock } from "../engine/answer-blocks.js";
import type { UserContext } from "../contracts/context.js";
import { modelVisibleContext, type UserContextToModel } from "../engine/model-settings.js";
import type { Middleware } from "./middleware-chain.js";
import { newId } from "./ids.js";
import { callModel, modelName, type ModelRetry } from "./model-call.js";
import type { TokenUsage } from "../host/usage.js";
import type { RunTrace } from "../telemetry/run-trace.js";

export interface EngineStepOptions {
  /** The primary model, then the fallback (if any). */
  models: LanguageModelV4[];
  /** Retries per model for 429, 5xx and network errors. */
  retries: number;
  tools: () => ToolDefinition[];
  /** Tools the provider runs itself; their calls are observed, never run by the host. */
  providerTools?: ProviderTools;
  signal: AbortSignal;
  stream?: boolean;
  /** A streamed answer's text as it arrives (each attempt's from its start: a retry follows an inference-retry event). */
  onTextDelta?: (delta: string) => void;
  deadlineMs?: number;
  trace: RunTrace;
  onRetry(retry: ModelRetry): void;
  /** Every answer the engine got, with the model that gave it (the loop counts usage from here, not from the turn). */
  onAnswer(answer: { model: LanguageModelV4; usage: TokenUsage; finishReason: FinishReason }): void;
}

/** The innermost link: one model call (retried, then the fallback); the answer is appended as blocks to a copy of the turn. */
export function engineStep(options: EngineStepOptions) {
  return async (turn: Turn): Promise<Turn> => {
    const { value: result, model } = await options.trace.inference(options.models[0].modelId, async (span) => {
      const answer = await callModel<InferenceResult>({
        models: options.models,
        retries: options.retries,
        signal: options.signal,
        deadlineMs: options.deadlineMs,
        onRetry: (retry) => {
          span.retried(retry);
          options.onRetry(retry);
        },
        call: (candidate) =>
          infer(candidate, turn, {
            tools: options.tools(),
            ...(options.providerTools ? { providerTools: options.providerTools } : {}),
            signal: options.signal,
            stream: options.stream,
            ...(options.onTextDelta ? { onTextDelta: options.onTextDelta } : {}),
          }),
      });
      const usage = { inputTokens: answer.value.usage.inputTokens ?? 0, outputTokens: answer.value.usage.outputTokens ?? 0 };
      span.answered(answer.model.modelId, usage);
      options.onAnswer({ model: answer.model, usage, finishReason: answer.value.finishReason });
      return answer;
    });
    const answered = result.content.flatMap((part) => answerBlock(part) ?? []);
    const calls = answered.filter((block) => block.kind === "tool_call").length;
    const blocks: Block[] = answered.map((block) => ({
      id: newId("blk"),
      ...block,
      // Each text block of the answer says how many calls the answer asked the host to run.
      metadata: block.kind === "llm_text" ? { [BlockMetadataKeys.toolCalls.id]: calls } : {},
    }));
    const next: Turn = { ...turn, blocks: [...turn.blocks, ...blocks], metadata: { ...turn.metadata } };
    TurnMetadataKeys.usage.set(next.metadata, result.usage);
    TurnMetadataKeys.stopReason.set(next.metadata, result.finishReason);
    TurnMetadataKeys.model.set(next.metadata, modelName(model));
    return next;
  };
}

/**
 * Built in, innermost (next to the engine) so no script middleware can strip it: writes what the model is
 * shown of the user context (the tenant's `userContextToModel`: by default the original request only) into the
 * turn metadata of every model call; the prompt builder shows it to the model. Scripts and tools see the whole
 * user context in their ctx, never this.
 */
export function userContextMiddleware(userContext: UserContext, policy: UserContextToModel | undefined): Middleware {
  const visible = modelVisibleContext(userContext, policy);
  return {
    name: "hookbox/user-context",
    origin: "host",
    run: (turn, next) => {
      const metadata = { ...turn.metadata };
      if (visible) TurnMetadataKeys.modelContext.set(metadata, visible);
      else delete metadata[TurnMetadataKeys.modelContext.id];
      return next({ ...turn, metadata });
    },
  };
}
