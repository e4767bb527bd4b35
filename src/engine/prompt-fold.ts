import type { LanguageModelV4Message } from "@ai-sdk/provider";
import type { Block } from "../turns/turn.js";
import { freeze } from "../turns/block-json.js";

export type AssistantPart = Extract<LanguageModelV4Message, { role: "assistant" }>["content"][number];
export type ToolResultPart = Extract<LanguageModelV4Message, { role: "tool" }>["content"][number] & { type: "tool-result" };

/**
 * The messages a turn's blocks fold into (prompt.ts), kept between calls. A model call's turn is the last
 * call's turn plus a few blocks, so the fold goes on from where it was instead of walking the whole history
 * again; the open assistant answer and tool results stay open until a later block closes them. What a call
 * gets is a copy with the open parts closed, so the kept fold never changes under a caller.
 */
export class PromptFold {
  /** The blocks folded so far, in order (own list). */
  readonly blocks: Block[] = [];
  readonly system: LanguageModelV4Message[] = [];
  readonly messages: LanguageModelV4Message[] = [];
  assistant: AssistantPart[] = [];
  tool: ToolResultPart[] = [];
  readonly toolNames = new Map<string, string>();

  flushAssistant(): void {
    if (this.assistant.length) this.messages.push({ role: "assistant", content: this.assistant });
    this.assistant = [];
  }

  flush(): void {
    this.flushAssistant();
    if (this.tool.length) this.messages.push({ role: "tool", content: this.tool });
    this.tool = [];
  }

  /** The messages with what is still open closed, without closing it here. */
  closed(): { system: LanguageModelV4Message[]; messages: LanguageModelV4Message[] } {
    const open: LanguageModelV4Message[] = [];
    if (this.assistant.length) open.push({ role: "assistant", content: this.assistant.slice() });
    if (this.tool.length) open.push({ role: "tool", content: this.tool.slice() });
    return { system: this.system, messages: open.length ? [...this.messages, ...open] : this.messages };
  }
}

/** Folds kept by the turn's first block: a session's runs share their history's block objects. */
const folds = new WeakMap<Block, PromptFold>();

/**
 * The fold of `blocks`: the kept one when its blocks are the start of these (compared as objects), carried on
 * over the rest; otherwise a new one. Returned closed (see PromptFold.closed).
 */
export function foldBlocks(
  blocks: readonly Block[],
  foldBlock: (fold: PromptFold, block: Block) => void,
): { system: LanguageModelV4Message[]; messages: LanguageModelV4Message[] } {
  let fold = blocks.length ? folds.get(blocks[0]) : undefined;
  if (!fold || !continues(fold.blocks, blocks)) {
    fold = new PromptFold();
    if (blocks.length) folds.set(blocks[0], fold);
  }
  for (let index = fold.blocks.length; index < blocks.length; index++) {
    // Folded once: the block must not change after (blocks are immutable once in a turn).
    freeze(blocks[index]);
    foldBlock(fold, blocks[index]);
    fold.blocks.push(blocks[index]);
  }
  return fold.closed();
}

function continues(folded: readonly Block[], blocks: readonly Block[]): boolean {
  if (folded.length > blocks.length) return false;
  for (let index = 0; index < folded.length; index++) if (folded[index] !== blocks[index]) return false;
  return true;
}
