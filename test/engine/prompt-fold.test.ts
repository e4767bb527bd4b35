import { describe, expect, it } from "vitest";
import { turnToPrompt } from "../../src/engine/prompt.js";
import type { Block, Turn } from "../../src/turns/turn.js";

/*
 * A turn's prompt is folded once and carried on as blocks are added (src/engine/prompt-fold.ts): every call
 * must give exactly what a fold of the whole turn from its first block gives (a copy of the turn has new block
 * objects, so it is folded anew).
 */

const fresh = (turn: Turn): Turn => JSON.parse(JSON.stringify(turn)) as Turn;
let n = 0;
const block = (kind: Block["kind"], payload: Block["payload"]): Block => ({ id: `b${n++}`, kind, payload, metadata: {} });
const answer = (id: string) => [block("llm_text", { text: `calling ${id}` }), block("tool_call", { id, name: "lookup", args: { id } })];
const result = (id: string) => block("tool_use", { id, result: { id, total: 120 } });

describe("the prompt of a growing turn", () => {
  it("is the same carried on block by block as folded whole, across runs that share the history's blocks", () => {
    const turn: Turn = {
      id: "t",
      blocks: [block("system", { text: "be brief" }), block("user", { text: "hello" })],
      metadata: {},
      data: {},
    };
    const calls: { carried: unknown; whole: unknown }[] = [];
    for (let i = 0; i < 30; i++) {
      calls.push({ carried: turnToPrompt(turn), whole: turnToPrompt(fresh(turn)) });
      turn.blocks.push(...answer(`c${i}`));
      // Half the calls see the answer before its result (an open assistant message), half after.
      if (i % 2) calls.push({ carried: turnToPrompt(turn), whole: turnToPrompt(fresh(turn)) });
      // An answer open at a call may go on after it (a second part of the same message).
      if (i === 7) {
        calls.push({ carried: turnToPrompt(turn), whole: turnToPrompt(fresh(turn)) });
        turn.blocks.push(block("reasoning", { text: "and also" }));
      }
      turn.blocks.push(result(`c${i}`));
      if (i % 5 === 4) turn.blocks.push(block("llm_text", { text: "done" }), block("user", { text: `next ${i}` }));
    }
    // The next run of the session: its turn is a new list over the same blocks, plus its user message.
    const next: Turn = { ...turn, id: "t2", blocks: [...turn.blocks, block("user", { text: "one more" })] };
    calls.push({ carried: turnToPrompt(next), whole: turnToPrompt(fresh(next)) });
    for (const call of calls) expect(call.carried).toEqual(call.whole);
    expect((calls.at(-1)!.carried as unknown[]).length).toBeGreaterThan(60);
  });

  it("is folded anew when a turn does not continue the kept fold (a middleware rewrote it)", () => {
    const turn: Turn = { id: "t", blocks: [block("user", { text: "card 4111" }), ...answer("c1"), result("c1")], metadata: {}, data: {} };
    turnToPrompt(turn);
    const rewritten: Turn = {
      ...turn,
      blocks: [turn.blocks[0], { ...turn.blocks[1], payload: { text: "redacted" } }, ...turn.blocks.slice(2)],
    };
    expect(turnToPrompt(rewritten)).toEqual(turnToPrompt(fresh(rewritten)));
    expect(JSON.stringify(turnToPrompt(rewritten))).toContain("redacted");
    expect(turnToPrompt(turn)).toEqual(turnToPrompt(fresh(turn)));
  });
});
