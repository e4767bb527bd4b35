import { describe, expect, it } from "vitest";
import { TurnDataKeys, TurnMetadataKeys } from "../../src/turns/keys.gen.js";
import type { JsonObject } from "../../src/turns/json.js";
import { setSharedValue, shareValue } from "../../src/turns/shared-value.js";

describe("a typed key's shared value", () => {
  const definitions = [{ name: "lookup", description: "d", parameters: { type: "object" } }];
  const key = TurnDataKeys.toolDefinitions;

  it("is checked once, frozen deeply, and stored as that one copy in every bag", () => {
    const shared = shareValue(key, definitions);
    const bags: JsonObject[] = [{}, {}];
    for (const bag of bags) setSharedValue(key, bag, shared);
    expect(bags[0]![key.id]).toBe(bags[1]![key.id]);
    expect(bags[0]).toEqual({ "hookbox.tool_definitions@v1": definitions });
    expect(Object.isFrozen(shared.value)).toBe(true);
    expect(Object.isFrozen(shared.value[0]!.parameters)).toBe(true);
    expect(Object.isFrozen(definitions[0]!.parameters)).toBe(false); // the caller's own value stays its own
  });

  it("is refused when its schema refuses the value", () => {
    expect(() => shareValue(key, [{ name: "lookup" }] as never)).toThrow(/^hookbox\.tool_definitions@v1: refused/);
  });

  it("is the only thing setSharedValue stores, and only under the key it was checked for", () => {
    const forged = Object.freeze({ keyId: key.id, value: [{ name: 1 }] });
    expect(() => setSharedValue(key, {}, forged as never)).toThrow(/refused: not a value shareValue\(\) checked for this key/);
    const otherKey = shareValue(TurnMetadataKeys.model, "gpt-x");
    expect(() => setSharedValue(key, {}, otherKey as never)).toThrow(/refused/);
  });
});
