import type { Block } from "./turn.js";

/*
 * A block that has joined a turn is immutable: the store keeps it once, in the session's log, and every
 * later turn refers to it there. So the first time a block is measured or written its JSON text is kept
 * beside it, and the block, its payload and its metadata are frozen: to change a block, a middleware puts a
 * new block in its place (assigning to a field throws). Values deeper inside (a host tool's result object)
 * are not frozen, since they may belong to the code that made them; they must not change either.
 */

const texts = new WeakMap<Block, string>();

/** The block's JSON text; the first call freezes the block, so the text stays true. */
export function blockJson(block: Block): string {
  let text = texts.get(block);
  if (text === undefined) {
    text = JSON.stringify(block);
    freeze(block);
    texts.set(block, text);
  }
  return text;
}

/** A block read back from its stored text: frozen, and its text is known without serializing it again. */
export function storedBlock(json: string): Block {
  const block = JSON.parse(json) as Block;
  freeze(block);
  texts.set(block, json);
  return block;
}

/** Freezes a block as one that has joined a turn (without making its text). */
export function freeze(block: Block): void {
  Object.freeze(block);
  if (block.payload) Object.freeze(block.payload);
  if (block.metadata) Object.freeze(block.metadata);
}
