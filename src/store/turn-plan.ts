import type { Block, Turn } from "../turns/turn.js";
import { blockJson } from "../turns/block-json.js";
import { headJson } from "../turns/head-json.js";
import { leadingSegments, positions, pushSegment, type LogSegment, type TurnPiece } from "./turn-layout.js";

/*
 * What a snapshot adds to the store: the blocks new since the turn the writer last committed, and the rest as
 * positions already in the logs. The loop only appends to its turn, so the usual plan is the previous layout
 * plus the new blocks, found by comparing block objects (a pointer each) until the first new one. A middleware
 * may rewrite the turn: a block it kept (the same object, or a copy with the same id and text) keeps its place
 * in the log, and only what it changed is added.
 */

/** A turn as its writer last committed it; `blocks` is the writer's own array, in turn order. */
export interface CommittedTurn {
  blocks: Block[];
  segments: LogSegment[];
  headJson: string;
  blockBytes: number;
}

export interface TurnPlan {
  pieces: TurnPiece[];
  headJson: string;
  blockBytes: number;
  /** True when the new turn is the previous one plus blocks at its end. */
  appendOnly: boolean;
  /** The turn's blocks when planned (the writer's view takes these, even if the turn grew meanwhile). */
  blockCount: number;
}

export function planTurn(previous: CommittedTurn | undefined, turn: Turn): TurnPlan {
  const before = previous?.blocks ?? [];
  const blocks = turn.blocks;
  const shared = Math.min(before.length, blocks.length);
  let kept = 0;
  while (kept < shared && blocks[kept] === before[kept]) kept++;
  const appendOnly = kept === before.length;
  const segments = leadingSegments(previous?.segments ?? [], kept);
  let blockBytes = appendOnly ? (previous?.blockBytes ?? 0) : bytesOf(before, 0, kept);
  const pieces: TurnPiece[] = [];
  const flushSegments = () => {
    for (const segment of segments.splice(0)) pieces.push({ segment });
  };
  let appended: string[] = [];
  const flushAppended = () => {
    if (appended.length) pieces.push({ append: appended });
    appended = [];
  };
  const find = appendOnly ? undefined : placesOf(before, previous!.segments);
  for (let index = kept; index < blocks.length; index++) {
    const block = blocks[index];
    const text = blockJson(block);
    blockBytes += text.length;
    const place = find?.(block, text);
    if (place) {
      flushAppended();
      pushSegment(segments, { session: place.session, from: place.position, to: place.position + 1 });
    } else {
      flushSegments();
      appended.push(text);
    }
  }
  flushSegments();
  flushAppended();
  return { pieces, headJson: headJson(turn), blockBytes, appendOnly, blockCount: blocks.length };
}

/** The writer's view after the plan committed (`segments` as the store placed the new blocks). */
export function committedTurn(previous: CommittedTurn | undefined, turn: Turn, plan: TurnPlan, segments: LogSegment[]): CommittedTurn {
  if (previous && plan.appendOnly) {
    for (let index = previous.blocks.length; index < plan.blockCount; index++) previous.blocks.push(turn.blocks[index]);
    return Object.assign(previous, { segments, headJson: plan.headJson, blockBytes: plan.blockBytes });
  }
  return { blocks: turn.blocks.slice(0, plan.blockCount), segments, headJson: plan.headJson, blockBytes: plan.blockBytes };
}

function bytesOf(blocks: readonly Block[], from: number, to: number): number {
  let bytes = 0;
  for (let index = from; index < to; index++) bytes += blockJson(blocks[index]).length;
  return bytes;
}

/** Finds where a block of the previous turn lives: by object, or a copy by id and text (a script middleware's turn). */
function placesOf(before: readonly Block[], segments: readonly LogSegment[]) {
  const byObject = new Map<Block, { session: string; position: number }>();
  const byId = new Map<string, Block[]>();
  let index = 0;
  for (const place of positions(segments)) {
    const block = before[index++];
    if (!block) break;
    byObject.set(block, place);
    const same = byId.get(block.id);
    if (same) same.push(block);
    else byId.set(block.id, [block]);
  }
  return (block: Block, text: string) => {
    const own = byObject.get(block);
    if (own) return own;
    const twin = byId.get(block.id)?.find((candidate) => blockJson(candidate) === text);
    return twin && byObject.get(twin);
  };
}
