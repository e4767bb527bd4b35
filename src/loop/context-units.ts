import type { Block } from "../turns/turn.js";
import { PayloadKeys } from "../turns/keys.gen.js";
import { RESPONSE_KINDS } from "./pending-calls.js";

/*
 * Where the model's context may be cut. A turn's blocks form messages as the prompt builder sends them
 * (src/engine/prompt.ts): a user message per `user` or `context` block, one assistant message per model answer
 * (its reasoning, text and calls together), one tool message per answer's results. A window of the turn may
 * start only where a message starts and nothing before it is still waiting for something after it: a call's
 * result never goes without its call (providers refuse an orphan result), and an answer's reasoning stays with
 * the calls it came with (Anthropic and Gemini want the signed reasoning before the tool use). System blocks are
 * never cut: they are kept wherever the window starts.
 */

const USER_KINDS: ReadonlySet<string> = new Set(["user", "context"]);

/** Blocks that are kept whatever the window (system text). */
export function isPinned(block: Block): boolean {
  return block.kind === "system";
}

/** The id of the call a block answers, or of the call it is; undefined for other blocks. */
function callKey(block: Block): { call?: string; result?: string } {
  const id = block.payload[PayloadKeys.id];
  if (typeof id !== "string") return {};
  if (block.kind === "tool_call" || block.kind === "provider_tool_call") return { call: `${block.kind}:${id}` };
  if (block.kind === "tool_use") return { result: `tool_call:${id}` };
  if (block.kind === "provider_tool_result") return { result: `provider_tool_call:${id}` };
  return {};
}

/**
 * The indexes where a window of `blocks` may start, ascending. A result is paired with the nearest call with
 * its id before it (model call ids repeat across answers), and no start falls between the two.
 */
export function windowStarts(blocks: readonly Block[]): number[] {
  // The index of the last result of each call, by the call's index.
  const answeredAt = new Map<number, number>();
  const lastCall = new Map<string, number>();
  blocks.forEach((block, index) => {
    const { call, result } = callKey(block);
    if (call !== undefined) lastCall.set(call, index);
    if (result !== undefined) {
      const at = lastCall.get(result);
      if (at !== undefined) answeredAt.set(at, index);
    }
  });
  const starts: number[] = [];
  let reach = -1;
  let previous: Block | undefined;
  blocks.forEach((block, index) => {
    if (isPinned(block)) return;
    const startsMessage =
      USER_KINDS.has(block.kind) || (RESPONSE_KINDS.has(block.kind) && !(previous && RESPONSE_KINDS.has(previous.kind)));
    if (startsMessage && reach < index) starts.push(index);
    reach = Math.max(reach, answeredAt.get(index) ?? -1);
    previous = block;
  });
  return starts;
}

/** How many messages `blocks` make in the prompt (system blocks aside): what a reader counts as messages left out. */
export function messageCount(blocks: readonly Block[]): number {
  let count = 0;
  let group: "user" | "response" | "results" | undefined;
  for (const block of blocks) {
    if (isPinned(block)) continue;
    const kind = USER_KINDS.has(block.kind)
      ? "user"
      : RESPONSE_KINDS.has(block.kind)
        ? "response"
        : block.kind === "tool_use"
          ? "results"
          : group;
    if (kind === "user" || kind !== group) count++;
    group = kind;
  }
  return count;
}
