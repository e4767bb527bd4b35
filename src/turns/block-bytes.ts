import type { Block } from "./turn.js";
import { blockJson } from "./block-json.js";

/**
 * The sum of the JSON lengths of a turn's blocks (those `counts` accepts), kept up to date from what changed
 * since the last call: blocks are compared as objects up to the first difference (blocks are immutable once
 * in a turn, so an unchanged object has an unchanged text), and each block's text is made once.
 */
export class BlockBytes {
  /** The blocks last measured (own list). */
  private readonly measured: Block[] = [];
  private sum = 0;

  constructor(private readonly counts: (block: Block) => boolean = () => true) {}

  update(blocks: readonly Block[]): number {
    const before = this.measured;
    const shared = Math.min(before.length, blocks.length);
    let kept = 0;
    while (kept < shared && blocks[kept] === before[kept]) kept++;
    for (let index = kept; index < before.length; index++) this.sum -= this.bytesOf(before[index]);
    before.length = kept;
    for (let index = kept; index < blocks.length; index++) {
      this.sum += this.bytesOf(blocks[index]);
      before.push(blocks[index]);
    }
    return this.sum;
  }

  private bytesOf(block: Block): number {
    return this.counts(block) ? blockJson(block).length : 0;
  }
}
