import type { CommonContext, ToolCallRef, ToolErrorInfo } from "../contracts/context.js";
import type { Json } from "../turns/json.js";
import type { Block, Turn } from "../turns/turn.js";
import { PayloadKeys } from "../turns/keys.gen.js";
import { readCall, type CallFields } from "../turns/calls.js";
import type { EventLog } from "./event-log.js";
import type { HookChain } from "./hook-chain.js";
import { RESPONSE_KINDS } from "./pending-calls.js";
import type { Ending } from "./run-hooks.js";

/** A call the provider ran itself, with the result it gave (absent when the answer held none). */
export interface ProviderCall extends CallFields {
  result?: Json;
  error?: ToolErrorInfo;
}

/** The blocks of the turn's last model answer. */
function lastAnswer(turn: Turn): Block[] {
  let start = turn.blocks.length;
  while (start > 0 && RESPONSE_KINDS.has(turn.blocks[start - 1].kind)) start -= 1;
  return turn.blocks.slice(start);
}

/** The provider-run calls of the turn's last answer, in call order, each with its result. */
export function providerCalls(turn: Turn): ProviderCall[] {
  const answer = lastAnswer(turn);
  return answer
    .filter((block) => block.kind === "provider_tool_call")
    .map((block) => {
      const call: ProviderCall = readCall(block);
      const result = answer.find((other) => other.kind === "provider_tool_result" && other.payload[PayloadKeys.id] === call.id);
      if (!result) return call;
      const value = result.payload[PayloadKeys.result] ?? null;
      if (result.payload[PayloadKeys.isError] === true) {
        call.error = { message: typeof value === "string" ? value : JSON.stringify(value), code: "PROVIDER_TOOL_ERROR" };
      } else call.result = value;
      return call;
    });
}

/** The text of the turn's last answer (its text parts joined), never an earlier answer's. */
export function answerText(turn: Turn): string | undefined {
  const texts = lastAnswer(turn).filter((block) => block.kind === "llm_text");
  return texts.length ? texts.map((block) => String(block.payload[PayloadKeys.text] ?? "")).join("") : undefined;
}

/**
 * Hooks observe each provider-run call of the last answer: beforeToolCall with the call, a tool-finished event
 * with the provider's result, afterToolCall with that result. The host never runs such a call, and a hook can
 * only watch it or end the run (hook-chain.ts refuses anything else). A hook failure that is not fail-open ends
 * the run: the provider's call cannot be undone, so going on would be going on unchecked.
 */
export async function observeProviderCalls(
  calls: ProviderCall[],
  services: { hooks: HookChain; events: EventLog; context(): CommonContext },
): Promise<Ending | undefined> {
  const { hooks, events } = services;
  for (const call of calls) {
    const ref: ToolCallRef = {
      id: call.id,
      name: call.name,
      args: call.args,
      origin: "provider",
      providerExecuted: true,
      ...(call.rawArgs !== undefined ? { rawArgs: call.rawArgs } : {}),
    };
    const base = () => ({ ...services.context(), timestampMs: Date.now(), call: ref, attempt: 1 });
    const before = await hooks.beforeToolCall({ ...base(), phase: "beforeToolCall" });
    if (before.kind === "abort")
      return { status: "aborted", reason: before.reason, ...(before.errorCode ? { errorCode: before.errorCode } : {}) };
    if (before.kind === "blocked") return failedCheck(before.error);
    const outcome = call.error ? { error: call.error } : { result: call.result ?? null };
    events.emit({ type: "tool-finished", callId: call.id, name: call.name, attempt: 1, durationMs: 0, ...outcome, providerExecuted: true });
    const after = await hooks.afterToolCall({ ...base(), phase: "afterToolCall", durationMs: 0, ...outcome });
    if (after.kind === "abort")
      return { status: "aborted", reason: after.reason, ...(after.errorCode ? { errorCode: after.errorCode } : {}) };
    if (after.withheld && after.error) return failedCheck(after.error);
  }
  return undefined;
}

function failedCheck(error: ToolErrorInfo): Ending {
  return { status: "failed", reason: error.message, errorCode: error.code ?? "SCRIPT_ERROR" };
}
