import type { Block, Turn } from "../turns/turn.js";
import { PayloadKeys } from "../turns/keys.gen.js";
import { readCall, type CallFields } from "../turns/calls.js";
import type { PendingCall } from "./tool-call.js";

/** Blocks a model response is made of; a run of them in the turn is one response. */
export const RESPONSE_KINDS: ReadonlySet<string> = new Set([
  "reasoning",
  "llm_text",
  "tool_call",
  "provider_tool_call",
  "provider_tool_result",
  "source",
  "file",
  "custom",
]);

/**
 * The calls of the turn's last model response that have no tool_use result yet, in call order.
 *
 * Call ids are only unique within one response: scripted models and some OpenAI-compatible servers number
 * calls per response (`c1` in every response), so a result is matched to a call of the same response, never
 * to an earlier response's call with the same id. Calls of earlier responses are never pending: each
 * response's calls are answered (or the run ended) before the next inference. So only the turn's tail is
 * read: back from the end to the start of the last response, whatever the length of the history before it.
 */
export function pendingCalls(turn: Turn): PendingCall[] {
  const blocks = turn.blocks;
  let end = blocks.length;
  while (end > 0 && !RESPONSE_KINDS.has(blocks[end - 1].kind)) end--;
  let start = end;
  while (start > 0 && RESPONSE_KINDS.has(blocks[start - 1].kind)) start--;
  const open: Block[] = [];
  for (let index = start; index < end; index++) if (blocks[index].kind === "tool_call") open.push(blocks[index]);
  for (let index = end; index < blocks.length && open.length > 0; index++) {
    const block = blocks[index];
    if (block.kind !== "tool_use") continue;
    const answered = open.findIndex((call) => call.payload[PayloadKeys.id] === block.payload[PayloadKeys.id]);
    if (answered >= 0) open.splice(answered, 1);
  }
  return open.map((block) => {
    // readCall's fresh object, with the block id: no copy of it per call.
    const call = readCall(block) as PendingCall;
    call.blockId = block.id;
    return call;
  });
}

/** A call as events and pauses show it (the block id is the loop's own bookkeeping). */
export const describeCall = ({ id, name, args, rawArgs }: CallFields): CallFields => {
  const described: CallFields = { id, name, args };
  if (rawArgs !== undefined) described.rawArgs = rawArgs;
  return described;
};
