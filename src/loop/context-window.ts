import type { Block, Turn } from "../turns/turn.js";
import type { ContextOptions } from "../host/types.js";
import type { RunUsage } from "../host/usage.js";
import type { ContextTrim } from "../events/types.js";
import { PayloadKeys } from "../turns/keys.gen.js";
import { blockJson } from "../turns/block-json.js";
import { BlockBytes } from "../turns/block-bytes.js";
import { isPinned, messageCount, windowStarts } from "./context-units.js";
import { newId } from "./ids.js";
import { headJson } from "../turns/head-json.js";

/*
 * The model's context (docs/loop.md, "The model's context"). Before each inference the run's turn is measured
 * against the context budget; past it, the oldest messages leave the turn, down to TRIM_TO of the budget, and a
 * `context` block takes their place: a note of how much was left out, or a summary of it by the tenant's guard
 * model. System blocks stay, and a window never starts between a call and its result (context-units.ts).
 * What left the turn stays in the session's log and its events; the next run starts from the trimmed turn, so
 * a summary is made once, not at every run, and what a run reads does not grow with the session.
 */

export const DEFAULT_CONTEXT_TOKENS = 100_000;
/** Characters of JSON text per token until a model's answer reports its input tokens. */
const CHARS_PER_TOKEN = 4;
/**
 * A trim leaves the turn at most this share of the budget. The calls after it then start with the same
 * messages (a provider's prompt cache keeps hitting), and the work of choosing is done once per trim, not per call.
 */
const TRIM_TO = 0.75;

/** `restart_type` of the block that stands for what was left out. */
const TRIMMED = "trimmed";
const SUMMARY = "summary";
/** Payload fields of that block: the session's totals so far. */
const DROPPED_MESSAGES = "dropped_messages";
const DROPPED_BYTES = "dropped_bytes";

export interface ContextPolicy {
  maxTokens: number;
  maxBytes?: number;
  summarize: boolean;
}

export function contextPolicy(options: ContextOptions | undefined): ContextPolicy {
  return {
    maxTokens: options?.maxTokens ?? DEFAULT_CONTEXT_TOKENS,
    ...(options?.maxBytes !== undefined ? { maxBytes: options.maxBytes } : {}),
    summarize: options?.summarize ?? false,
  };
}

/**
 * Summarizes what left the context (with the summary made at an earlier trim, if any). Its usage is already
 * counted in the run's (priced by the tenant's pricing) when it resolves.
 */
export type Summarizer = (
  request: { previous?: string; dropped: readonly Block[]; maxChars: number },
  signal: AbortSignal,
) => Promise<{ text: string; model: string; usage: RunUsage }>;

export class ContextWindow {
  private readonly blocks = new BlockBytes();
  private tokensPerChar = 1 / CHARS_PER_TOKEN;
  /** The turn's size when last measured: what the next answer's input tokens are compared with. */
  private lastSize = 0;

  constructor(
    readonly policy: ContextPolicy,
    private readonly summarizer?: Summarizer,
  ) {}

  /** The budget in characters of JSON text, by the tokens-per-character ratio known so far. */
  get budgetBytes(): number {
    return Math.floor(Math.min(this.policy.maxBytes ?? Number.POSITIVE_INFINITY, this.policy.maxTokens / this.tokensPerChar));
  }

  /** The turn's JSON length: its own fields, its blocks and the commas between them. */
  size(turn: Turn): number {
    this.lastSize = headJson(turn).length + this.blocks.update(turn.blocks) + Math.max(0, turn.blocks.length - 1);
    return this.lastSize;
  }

  /**
   * A model answered what it was last sent with `inputTokens`: the estimate follows the model's own count from
   * now on (never below one token per 4 characters), so text that tokenizes densely is not under-counted.
   */
  calibrate(inputTokens: number | undefined): void {
    if (inputTokens && this.lastSize > 0) this.tokensPerChar = Math.max(1 / CHARS_PER_TOKEN, inputTokens / this.lastSize);
  }

  /** The turn within the budget: the same turn when it fits, else a trimmed one and what the trim left out. */
  async fit(turn: Turn, signal: AbortSignal): Promise<{ turn: Turn; trim?: ContextTrim }> {
    const size = this.size(turn);
    const budget = this.budgetBytes;
    if (size <= budget) return { turn };
    const blocks = turn.blocks;
    // Room for the block that will stand for what is left out, less the one an earlier trim left.
    const standIn = blockJson(
      markerBlock({ messages: 1e9, bytes: 1e15 }, this.policy.summarize ? "x".repeat(summaryChars(budget)) : undefined),
    );
    const previous = blocks.find(isMarker);
    const excess = size - budget * TRIM_TO + standIn.length - (previous ? blockJson(previous).length : 0);
    const cut = cutAt(blocks, windowStarts(blocks), excess);
    if (cut === undefined) return { turn };
    const before = blocks.slice(0, cut);
    const earlier = before.find(isMarker);
    const dropped = before.filter((block) => !isPinned(block) && block !== earlier);
    const droppedBytes = dropped.reduce((sum, block) => sum + blockJson(block).length, 0);
    const messages = messageCount(dropped);
    const total = {
      messages: numberField(earlier, DROPPED_MESSAGES) + messages,
      bytes: numberField(earlier, DROPPED_BYTES) + droppedBytes,
    };
    const summary = this.policy.summarize ? await this.summarize(earlier, dropped, budget, signal) : undefined;
    const stand = markerBlock(total, summary && "text" in summary ? summary.text : undefined);
    const trimmed: Turn = { ...turn, blocks: [...before.filter(isPinned), stand, ...blocks.slice(cut)] };
    return {
      turn: trimmed,
      trim: {
        droppedMessages: messages,
        droppedBlocks: dropped.length,
        droppedBytes,
        droppedTokens: Math.round(droppedBytes * this.tokensPerChar),
        totalDroppedMessages: total.messages,
        keptBytes: this.size(trimmed),
        budgetBytes: budget,
        summarized: summary !== undefined && "text" in summary,
        ...(summary && "text" in summary ? { model: summary.model, usage: summary.usage } : {}),
        ...(summary && "error" in summary ? { summaryError: summary.error } : {}),
      },
    };
  }

  private async summarize(
    earlier: Block | undefined,
    dropped: readonly Block[],
    budget: number,
    signal: AbortSignal,
  ): Promise<{ text: string; model: string; usage: RunUsage } | { error: string }> {
    if (!this.summarizer) return { error: "the tenant has no guard model to summarize with (capabilities.guardModel)" };
    const previous = earlier?.payload[PayloadKeys.restartType] === SUMMARY ? earlier.payload[PayloadKeys.item] : undefined;
    try {
      const maxChars = summaryChars(budget);
      const made = await this.summarizer({ ...(typeof previous === "string" ? { previous } : {}), dropped, maxChars }, signal);
      return { ...made, text: made.text.slice(0, maxChars) };
    } catch (error) {
      if (signal.aborted) throw error;
      return { error: (error as Error)?.message ?? String(error) };
    }
  }
}

/** The longest summary: half of the room a trim leaves under the budget. */
function summaryChars(budget: number): number {
  return Math.max(200, Math.floor((budget * (1 - TRIM_TO)) / 2));
}

/**
 * Where the window starts: the first start that leaves out at least `excess` characters of blocks that are
 * not pinned; the last start (the latest message alone) when none does. Undefined when nothing would be left out.
 */
function cutAt(blocks: readonly Block[], starts: readonly number[], excess: number): number | undefined {
  let dropped = 0;
  let index = 0;
  let cut: number | undefined;
  for (const start of starts) {
    for (; index < start; index++) if (!isPinned(blocks[index]) && !isMarker(blocks[index])) dropped += blockJson(blocks[index]).length;
    if (dropped === 0) continue;
    cut = start;
    if (dropped >= excess) break;
  }
  return cut;
}

/** The block that stands for what an earlier trim left out. */
function isMarker(block: Block): boolean {
  const type = block.payload[PayloadKeys.restartType];
  return block.kind === "context" && (type === TRIMMED || type === SUMMARY) && typeof block.payload[DROPPED_MESSAGES] === "number";
}

function numberField(block: Block | undefined, field: string): number {
  const value = block?.payload[field];
  return typeof value === "number" ? value : 0;
}

function markerBlock(total: { messages: number; bytes: number }, summary: string | undefined): Block {
  return {
    id: newId("blk"),
    kind: "context",
    role: "user",
    payload: {
      [PayloadKeys.restartType]: summary !== undefined ? SUMMARY : TRIMMED,
      [PayloadKeys.item]:
        summary ??
        `${total.messages} earlier message${total.messages === 1 ? " was" : "s were"} left out of this conversation to fit the model's context budget.`,
      [DROPPED_MESSAGES]: total.messages,
      [DROPPED_BYTES]: total.bytes,
    },
    metadata: {},
  };
}
