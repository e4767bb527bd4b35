import type { Block, Turn } from "../turns/turn.js";

/*
 * A stored turn's own fields ("head"): the turn with an empty blocks array in first place, as JSON text, so
 * the whole turn's text is the head with the blocks' stored texts spliced in, never parsed or re-serialized.
 */

const PREFIX = '{"blocks":[]';

export function headJson(turn: Turn): string {
  const { blocks: _blocks, ...rest } = turn;
  return JSON.stringify({ blocks: [], ...rest });
}

export function turnFromParts(head: string, blocks: Block[]): Turn {
  return { ...(JSON.parse(head) as Turn), blocks };
}

export function turnTextFromParts(head: string, blockTexts: string[]): string {
  if (!head.startsWith(PREFIX))
    return JSON.stringify(
      turnFromParts(
        head,
        blockTexts.map((text) => JSON.parse(text) as Block),
      ),
    );
  return `{"blocks":[${blockTexts.join(",")}]${head.slice(PREFIX.length)}`;
}
