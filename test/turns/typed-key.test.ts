import { describe, expect, it } from "vitest";
import { TypedKeyError } from "../../src/turns/typed-key.js";
import { BlockMetadataKeys, contextRestartDisabledKey, TurnDataKeys, TurnMetadataKeys } from "../../src/turns/keys.gen.js";
import type { JsonObject } from "../../src/turns/json.js";
import { parseTurn } from "../../src/turns/turn.js";

describe("typed keys (host)", () => {
  it("reports a missing key as missing, and get throws naming the key", () => {
    const bag: JsonObject = {};
    expect(TurnMetadataKeys.sessionId.lookup(bag)).toEqual({ found: false, reason: "missing" });
    expect(TurnMetadataKeys.sessionId.find(bag)).toBeUndefined();
    expect(() => TurnMetadataKeys.sessionId.get(bag)).toThrow("hookbox.session_id@v1: missing");
  });

  it("reads a stored value that matches its schema", () => {
    const bag: JsonObject = { "hookbox.usage@v1": { inputTokens: 12, outputTokens: 3 } };
    expect(TurnMetadataKeys.usage.get(bag)).toEqual({ inputTokens: 12, outputTokens: 3 });
  });

  it("rejects a stored value that fails its schema with an error naming the key", () => {
    const bag: JsonObject = { "hookbox.model@v1": 42 };
    const read = () => TurnMetadataKeys.model.get(bag);
    expect(read).toThrow(TypedKeyError);
    expect(read).toThrow(/^hookbox\.model@v1: stored value does not match its schema/);
    expect(() => TurnMetadataKeys.model.find(bag)).toThrow(/hookbox\.model@v1/);
  });

  it("stores a valid value under the versioned id", () => {
    const bag: JsonObject = {};
    TurnMetadataKeys.model.set(bag, "gpt-x");
    TurnDataKeys.toolDefinitions.set(bag, [{ name: "lookup", description: "d", parameters: { type: "object" } }]);
    expect(bag).toEqual({
      "hookbox.model@v1": "gpt-x",
      "hookbox.tool_definitions@v1": [{ name: "lookup", description: "d", parameters: { type: "object" } }],
    });
  });

  it.each([
    ["a function", () => 1],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["a Date", new Date(0)],
    ["undefined", undefined],
  ])("refuses %s (not JSON) and stores nothing", (_label, value) => {
    const bag: JsonObject = { other: 1 };
    expect(() => TurnMetadataKeys.model.set(bag, value as never)).toThrow(/^hookbox\.model@v1: refused/);
    expect(bag).toEqual({ other: 1 });
  });

  it("refuses a cyclic value and stores nothing", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const bag: JsonObject = {};
    expect(() => TurnDataKeys.toolConfig.set(bag, cyclic as never)).toThrow(/hookbox\.tool_config@v1: refused/);
    expect(bag).toEqual({});
  });

  it("refuses JSON that fails the schema, keeping the previous value", () => {
    const bag: JsonObject = { "hookbox.tool_calls@v1": 2 };
    expect(() => BlockMetadataKeys.toolCalls.set(bag, 2.5)).toThrow(/hookbox\.tool_calls@v1: refused/);
    expect(() => TurnMetadataKeys.usage.set(bag, { inputTokens: 1, tokens: 2 } as never)).toThrow(/hookbox\.usage@v1: refused/);
    expect(() => BlockMetadataKeys.origin.set(bag, "elsewhere" as never)).toThrow(/hookbox\.origin@v1: refused/);
    expect(bag).toEqual({ "hookbox.tool_calls@v1": 2 });
  });

  it("keeps extra fields of a user context, and requires its fixed ones", () => {
    const bag: JsonObject = {};
    TurnMetadataKeys.userContext.set(bag, { originalUserRequest: "refund A17", timestampMs: 5, ticket: "T-1" });
    expect(TurnMetadataKeys.userContext.get(bag)).toEqual({ originalUserRequest: "refund A17", timestampMs: 5, ticket: "T-1" });
    expect(() => TurnMetadataKeys.userContext.set(bag, { timestampMs: 5 } as never)).toThrow(/hookbox\.user_context@v1: refused/);
  });

  it("builds one versioned key per suffix in the context-restart flag family", () => {
    const key = contextRestartDisabledKey("docs");
    expect(key.id).toBe("hookbox.context_restart_disabled.docs@v1");
    expect(key.family).toBe("turn_data");
    const bag: JsonObject = {};
    key.set(bag, true);
    expect(contextRestartDisabledKey("docs").get(bag)).toBe(true);
    expect(contextRestartDisabledKey("other").find(bag)).toBeUndefined();
    expect(() => key.set(bag, "yes" as never)).toThrow(/context_restart_disabled\.docs@v1: refused/);
    expect(() => contextRestartDisabledKey("")).toThrow(/suffix must be non-empty/);
    expect(() => contextRestartDisabledKey("a b@v2")).toThrow(/suffix/);
  });
});

describe("turn model", () => {
  it("reads unknown block kinds as other and fills empty bags", () => {
    const turn = parseTurn({
      id: "t1",
      blocks: [
        { id: "b1", kind: "user", payload: { text: "hi" } },
        { id: "b2", kind: "hologram" },
      ],
    });
    expect(turn.blocks.map((block) => block.kind)).toEqual(["user", "other"]);
    expect(turn.blocks[1]).toEqual({ id: "b2", kind: "other", payload: {}, metadata: {} });
    expect(turn.metadata).toEqual({});
    expect(turn.data).toEqual({});
  });

  it("rejects a block without an id", () => {
    expect(() => parseTurn({ id: "t1", blocks: [{ kind: "user" }] })).toThrow();
  });
});
