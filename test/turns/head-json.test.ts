import { describe, expect, it } from "vitest";
import { TurnDataKeys } from "../../src/turns/keys.gen.js";
import type { Turn } from "../../src/turns/turn.js";
import { headJson } from "../../src/turns/head-json.js";
import { bagJson, jsonOf, keepJson } from "../../src/turns/known-json.js";
import { setSharedValue, shareValue } from "../../src/turns/shared-value.js";

/** The head as the store wrote it before kept texts: the turn re-serialized whole, blocks emptied and first. */
const plainHead = (turn: Turn) => {
  const { blocks: _blocks, ...rest } = turn;
  return JSON.stringify({ blocks: [], ...rest });
};

describe("a turn's head as JSON", () => {
  const definitions = [
    {
      name: "lookup",
      description: "looks up an order",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    },
  ];

  it("is the text JSON.stringify makes, with a shared value's kept text spliced in, in the turn's key order", () => {
    const shared = shareValue(TurnDataKeys.toolDefinitions, definitions);
    const turn = {
      id: "turn_1",
      metadata: {
        "hookbox.model@v1": "scripted:m.json",
        "hookbox.usage@v1": { inputTokens: 3, outputTokens: 4, costUsd: 0.25 },
        gone: undefined,
      },
      blocks: [{ id: "b1", kind: "user", payload: { text: "hi" }, metadata: {} }],
      data: { "hookbox.tool_config@v1": { maxIterations: 10 }, "x.quote@v1": 'say "hi"\n', "x.none@v1": undefined },
    } as unknown as Turn;
    setSharedValue(TurnDataKeys.toolDefinitions, turn.data, shared);
    expect(headJson(turn)).toBe(plainHead(turn));
    expect(JSON.parse(headJson(turn))).toEqual({ blocks: [], id: "turn_1", metadata: turn.metadata, data: turn.data });
  });

  it("splices the kept text instead of serializing the value again", () => {
    const value = Object.freeze({ a: 1 });
    keepJson(value, '{"a":1,"kept":true}');
    expect(jsonOf(value)).toBe('{"a":1,"kept":true}');
    expect(bagJson({ first: 0, value, last: [1] })).toBe('{"first":0,"value":{"a":1,"kept":true},"last":[1]}');
    expect(headJson({ id: "t", blocks: [], metadata: {}, data: { value } })).toBe(
      '{"blocks":[],"id":"t","metadata":{},"data":{"value":{"a":1,"kept":true}}}',
    );
    // Only a bag's own values are looked up: deeper inside, a value is serialized as it is.
    expect(bagJson({ outer: { value } })).toBe('{"outer":{"value":{"a":1}}}');
  });

  it("has the length of what the turn's own fields add to its JSON, whatever the place of blocks", () => {
    const turn = { blocks: [], id: "t2", metadata: { a: [1, 2] }, data: {} } as unknown as Turn;
    expect(headJson(turn).length).toBe(JSON.stringify({ ...turn, blocks: [] }).length);
  });
});
