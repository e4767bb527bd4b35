import type { LanguageModelV4 } from "@ai-sdk/provider";
import { HookboxError, isHookboxError } from "../errors.js";
import { infer } from "../engine/infer.js";
import { newId } from "../loop/ids.js";
import { PayloadKeys } from "../turns/keys.gen.js";
import type { Block, Turn } from "../turns/turn.js";

/*
 * ctx.model.generate on the host: one inference of the tenant's guard model through the same engine code
 * as the run's own inferences (src/engine/infer.ts), without tools. The prompt is a fresh conversation
 * (the run's conversation is not sent: a guard judges what the script shows it).
 */

export interface GuardMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface GuardRequest {
  prompt?: string;
  messages?: GuardMessage[];
  maxTokens?: number;
}

export interface GuardAnswer {
  text: string;
  usage: { inputTokens: number; outputTokens: number };
}

const KINDS = { system: "system", user: "user", assistant: "llm_text" } as const;

function guardTurn(request: GuardRequest): Turn {
  const messages: GuardMessage[] = [...(request.messages ?? [])];
  if (request.prompt !== undefined) messages.push({ role: "user", content: request.prompt });
  if (messages.length === 0) throw new HookboxError("CAPABILITY_INVALID", "ctx.model.generate: give a prompt or messages");
  const blocks: Block[] = messages.map((message) => ({
    id: newId("blk"),
    kind: KINDS[message.role],
    role: message.role,
    payload: { [PayloadKeys.text]: message.content },
    metadata: {},
  }));
  return { id: newId("turn"), blocks, metadata: {}, data: {} };
}

/** Tokens of framing the host counts for each message (its role and the chat template around it). */
const TOKENS_PER_MESSAGE = 8;

/**
 * The most a guard call may spend, held against the run's budget while it is in flight: its output cap, and
 * for its input one token per UTF-8 byte of every message (a byte-level tokenizer never makes more) plus
 * framing. Generous on purpose: a held token that is not spent is given back when the call is answered.
 */
export function mostGuardUsage(request: GuardRequest, maxOutputTokens: number): { inputTokens: number; outputTokens: number } {
  const texts = [...(request.messages ?? []).map((message) => message.content), ...(request.prompt !== undefined ? [request.prompt] : [])];
  return {
    inputTokens: texts.reduce((sum, text) => sum + Buffer.byteLength(text) + TOKENS_PER_MESSAGE, 0),
    outputTokens: outputCap(request, maxOutputTokens),
  };
}

function outputCap(request: GuardRequest, maxOutputTokens: number): number {
  return Math.min(request.maxTokens ?? maxOutputTokens, maxOutputTokens);
}

export async function generateWithGuard(
  model: LanguageModelV4,
  request: GuardRequest,
  options: { timeoutMs: number; signal: AbortSignal; maxOutputTokens: number },
): Promise<GuardAnswer> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  try {
    const result = await infer(model, guardTurn(request), {
      tools: [],
      signal: AbortSignal.any([timeout, options.signal]),
      maxOutputTokens: outputCap(request, options.maxOutputTokens),
    });
    return {
      text: result.text ?? "",
      usage: { inputTokens: result.usage.inputTokens ?? 0, outputTokens: result.usage.outputTokens ?? 0 },
    };
  } catch (error) {
    if (timeout.aborted)
      throw new HookboxError("CAPABILITY_TIMEOUT", `ctx.model.generate: the guard model took longer than ${options.timeoutMs} ms`);
    if (options.signal.aborted) throw new HookboxError("CANCELLED", "ctx.model.generate: the run ended");
    if (isHookboxError(error) && error.code === "CAPABILITY_INVALID") throw error;
    throw new HookboxError(
      "CAPABILITY_FAILED",
      `ctx.model.generate: the guard model failed: ${(error as Error)?.message ?? String(error)}`,
    );
  }
}
