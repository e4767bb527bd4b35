import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { Block, Turn } from "../../src/turns/turn.js";
import { ContextWindow, contextPolicy } from "../../src/loop/context-window.js";
import { messageCount, windowStarts } from "../../src/loop/context-units.js";
import { turnToPrompt } from "../../src/engine/prompt.js";
import { propertyParameters } from "../helpers/property.js";

/*
 * The context window over random histories: whatever the conversation (answers with reasoning, several calls
 * with repeated ids, provider-run calls, restarts' context blocks, system blocks anywhere) and whatever the
 * budget, what is kept never separates a call from its result or an answer's parts from each other, keeps every
 * system block, is the newest part of the conversation, and fits the budget unless one message alone does not.
 */

let nextId = 0;
const block = (kind: string, payload: Record<string, unknown>): Block =>
  ({ id: `blk_${nextId++}`, kind, role: kind === "user" ? "user" : "assistant", payload, metadata: {} }) as Block;

const text = fc.string({ minLength: 1, maxLength: 300 });
const callId = fc.constantFrom("c1", "c2", "c3");

/**
 * One exchange of a conversation, as the loop appends it. An answer's results usually follow its calls; a
 * middleware may move them, so some arrive only after the next exchange (`late`).
 */
const unit: fc.Arbitrary<{ blocks: Block[]; late?: Block[] }> = fc.oneof(
  text.map((t) => ({ blocks: [block("user", { text: t })] })),
  text.map((t) => ({ blocks: [block("system", { text: t })] })),
  fc
    .tuple(fc.string({ maxLength: 8 }), text)
    .map(([type, item]) => ({ blocks: [block("context", { restart_type: type || "docs", item })] })),
  fc
    .record({
      reasoning: fc.option(text, { nil: undefined }),
      text: fc.option(text, { nil: undefined }),
      calls: fc.array(fc.tuple(callId, text), { maxLength: 3 }),
      provider: fc.option(fc.tuple(callId, text), { nil: undefined }),
      source: fc.boolean(),
      answered: fc.constantFrom("now", "late", "never"),
    })
    .map((answer) => {
      const blocks: Block[] = [];
      if (answer.reasoning) blocks.push(block("reasoning", { text: answer.reasoning }));
      if (answer.text) blocks.push(block("llm_text", { text: answer.text }));
      if (answer.provider) {
        blocks.push(block("provider_tool_call", { id: answer.provider[0], name: "web_search", args: {} }));
        blocks.push(block("provider_tool_result", { id: answer.provider[0], name: "web_search", result: answer.provider[1] }));
      }
      for (const [id] of answer.calls) blocks.push(block("tool_call", { id, name: "lookup", args: { q: id } }));
      if (answer.source) blocks.push(block("source", { url: "https://example.com" }));
      if (blocks.length === 0) blocks.push(block("llm_text", { text: "ok" }));
      const results = answer.calls.map(([id, result]) => block("tool_use", { id, name: "lookup", result }));
      if (answer.answered === "now") blocks.push(...results);
      return { blocks, ...(answer.answered === "late" ? { late: results } : {}) };
    }),
);

const history = fc.array(unit, { minLength: 1, maxLength: 30 }).map((units) => {
  const blocks: Block[] = [];
  let late: Block[] = [];
  for (const next of units) {
    blocks.push(...next.blocks, ...late);
    late = next.late ?? [];
  }
  return [...blocks, ...late];
});
const turnOf = (blocks: Block[]): Turn => ({ id: "turn_1", blocks, metadata: {}, data: {} });
const isMarker = (b: Block) => b.kind === "context" && typeof b.payload.dropped_messages === "number";

/** Each result's call: the nearest call with its id before it (the pairing the prompt builder and providers use). */
function pairs(blocks: readonly Block[]): Map<Block, Block> {
  const last = new Map<string, Block>();
  const paired = new Map<Block, Block>();
  for (const b of blocks) {
    const id = String(b.payload.id);
    if (b.kind === "tool_call" || b.kind === "provider_tool_call") last.set(`${b.kind}:${id}`, b);
    const call =
      b.kind === "tool_use"
        ? last.get(`tool_call:${id}`)
        : b.kind === "provider_tool_result"
          ? last.get(`provider_tool_call:${id}`)
          : undefined;
    if (call) paired.set(b, call);
  }
  return paired;
}

/** Each block of a model answer, with every block of the same answer (a run of response blocks). */
function answers(blocks: readonly Block[]): Map<Block, Block[]> {
  const response = new Set([
    "reasoning",
    "llm_text",
    "tool_call",
    "provider_tool_call",
    "provider_tool_result",
    "source",
    "file",
    "custom",
  ]);
  const of = new Map<Block, Block[]>();
  let current: Block[] = [];
  for (const b of blocks) {
    if (b.kind === "system") continue;
    if (!response.has(b.kind)) {
      current = [];
      continue;
    }
    current.push(b);
    of.set(b, current);
  }
  return of;
}

function checkKept(original: Block[], kept: Block[]): void {
  const keptSet = new Set(kept);
  const before = pairs(original);
  const after = pairs(kept);
  for (const [result, call] of before) {
    // A result is kept with its own call (never paired with another call of the same id), and a kept call keeps its result.
    if (keptSet.has(result)) expect(after.get(result)).toBe(call);
    if (keptSet.has(call)) expect(keptSet.has(result)).toBe(true);
  }
  for (const [b, answer] of answers(original)) if (keptSet.has(b)) for (const part of answer) expect(keptSet.has(part)).toBe(true);
  expect(kept.filter((b) => b.kind === "system")).toEqual(original.filter((b) => b.kind === "system"));
  // The kept conversation is the newest part of the original.
  const ownKept = kept.filter((b) => b.kind !== "system" && !isMarker(b));
  const ownOriginal = original.filter((b) => b.kind !== "system" && !isMarker(b));
  expect(ownKept).toEqual(ownOriginal.slice(ownOriginal.length - ownKept.length));
}

describe("the context window", () => {
  it("never starts between a call and its result, nor inside an answer", () => {
    fc.assert(
      fc.property(history, (blocks) => {
        const paired = pairs(blocks);
        for (const start of windowStarts(blocks)) {
          const kept = blocks.slice(start);
          const keptSet = new Set(kept);
          for (const [result, call] of paired) if (keptSet.has(result)) expect(keptSet.has(call)).toBe(true);
          for (const [b, answer] of answers(blocks)) if (keptSet.has(b)) for (const part of answer) expect(keptSet.has(part)).toBe(true);
        }
      }),
      propertyParameters(300),
    );
  });

  it("trims a growing session to its budget, keeping pairs, answers and system text, the newest part, and counts", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(history, { minLength: 1, maxLength: 6 }), fc.integer({ min: 300, max: 6000 }), async (parts, maxBytes) => {
        const window = new ContextWindow(contextPolicy({ maxBytes }));
        let turn = turnOf([]);
        let original: Block[] = [];
        let totalDropped = 0;
        for (const part of parts) {
          turn = { ...turn, blocks: [...turn.blocks, ...part] };
          original = [...original, ...part];
          const before = turn.blocks;
          const fitted = await window.fit(turn, new AbortController().signal);
          if (!fitted.trim) {
            expect(fitted.turn).toBe(turn);
            continue;
          }
          const kept = fitted.turn.blocks;
          checkKept(original, kept);
          const dropped = before.filter((b) => !new Set(kept).has(b) && b.kind !== "system" && !isMarker(b));
          expect(fitted.trim.droppedMessages).toBe(messageCount(dropped));
          expect(fitted.trim.droppedBlocks).toBe(dropped.length);
          totalDropped += fitted.trim.droppedMessages;
          expect(fitted.trim.totalDroppedMessages).toBe(totalDropped);
          // The conversation now starts with the note (a user message: Anthropic and Gemini want one first).
          const firstOwn = kept.find((b) => b.kind !== "system")!;
          expect(isMarker(firstOwn)).toBe(true);
          expect(firstOwn.payload.dropped_messages).toBe(totalDropped);
          const prompt = turnToPrompt(fitted.turn).filter((m) => m.role !== "system");
          expect(prompt[0]).toMatchObject({ role: "user" });
          expect(JSON.stringify(prompt[0])).toContain(`${totalDropped} earlier message`);
          const keptOwn = kept.filter((b) => b.kind !== "system" && !isMarker(b));
          const lastStart = windowStarts(before).at(-1)!;
          const onlyTheLastMessage = keptOwn.length === before.slice(lastStart).filter((b) => b.kind !== "system").length;
          if (!onlyTheLastMessage) expect(fitted.trim.keptBytes).toBeLessThanOrEqual(maxBytes);
          expect(fitted.trim.keptBytes).toBe(JSON.stringify(fitted.turn).length);
          turn = fitted.turn;
        }
      }),
      propertyParameters(200),
    );
  });
});
