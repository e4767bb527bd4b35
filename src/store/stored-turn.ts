import type { Block, Turn } from "../turns/turn.js";

/*
 * A stored turn is its head (src/turns/head-json.ts: its own fields, with an empty blocks array in first place) and
 * its blocks' stored texts, spliced into the head, never parsed or re-serialized.
 */

const PREFIX = '{"blocks":[]';

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
