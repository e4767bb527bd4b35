import { describe, expect, it } from "vitest";
import { checkParsedTurn } from "../../src/contracts/turn-shape.js";
import { validateGuestHookReturn, validateMiddlewareTurn } from "../../src/sandbox/validate.js";
import { exceedsJsonLimits } from "../../src/server/json-limits.js";
import type { Json } from "../../src/turns/json.js";

/* The checks that run on values a script or a tenant controls: one pass, first problem only, bounded messages. */

const parsed = (value: unknown) => JSON.parse(JSON.stringify(value)) as Json;

describe("a script middleware's turn (structure only, checked once)", () => {
  it("normalizes as TurnSchema does: unknown kinds read as other, missing bags become {}, unknown keys go", () => {
    const turn = parsed({ id: "t", extra: 1, blocks: [{ id: "b", kind: "future_kind", payload: { deep: [[[1]]] }, junk: true }] });
    expect(checkParsedTurn(turn)).toBeUndefined();
    expect(turn).toEqual({
      id: "t",
      metadata: {},
      data: {},
      blocks: [{ id: "b", kind: "other", payload: { deep: [[[1]]] }, metadata: {} }],
    });
  });

  it("reports the first bad field with its path, naming the script and middleware", () => {
    const bad = parsed({
      id: "t",
      blocks: [
        { id: "a", kind: "user" },
        { id: "", kind: "user" },
        { id: "c", kind: 3 },
      ],
    });
    expect(checkParsedTurn(bad)).toEqual({ path: "$.blocks[1].id", message: "expected a non-empty string" });
    expect(() => validateMiddlewareTurn("policy", "stamp", parsed({ id: "t", blocks: [{ id: "a", kind: "user", payload: [] }] }))).toThrow(
      "policy: middleware stamp returned a value outside its contract at $.blocks[0].payload: expected an object, got array",
    );
    expect(checkParsedTurn(parsed([1]))).toEqual({ path: "$", message: "expected a turn object, got array" });
  });

  it("never walks into payloads: 20,000 blocks with deep payloads pass as they are", () => {
    const deep = JSON.parse(`${"[".repeat(2000)}${"]".repeat(2000)}`) as Json;
    const blocks = Array.from({ length: 20_000 }, (_, i) => ({ id: `b${i}`, kind: "llm_text", payload: { deep }, metadata: {} }));
    expect(validateMiddlewareTurn("s", "m", { id: "t", blocks, metadata: {}, data: {} } as unknown as Json).blocks).toHaveLength(20_000);
  });
});

describe("a rejected hook return", () => {
  it("is refused with a bounded message whatever its size", () => {
    const args = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, { nested: [i] }]));
    const unknownKeys = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`unknown${i}`, i]));
    let message = "";
    try {
      validateGuestHookReturn("policy", "beforeToolCall", parsed({ action: "proceed", args, ...unknownKeys }));
    } catch (error) {
      expect(error).toMatchObject({ code: "HOOK_CONTRACT" });
      message = (error as Error).message;
    }
    expect(message).toBe(
      'policy: beforeToolCall returned a value outside its contract at $: unknown fields "unknown0", "unknown1", "unknown2", "unknown3", "unknown4" and 4995 more',
    );
    // Without stray keys, a bad field deep in the union's branch is named by its path.
    expect(() => validateGuestHookReturn("policy", "beforeToolCall", parsed({ action: "deny", reason: 5 }))).toThrow(/at \$\.reason: /);
    expect(validateGuestHookReturn("policy", "beforeToolCall", parsed({ action: "proceed", args }))).toMatchObject({ action: "proceed" });
    expect(message.length).toBeLessThan(500);
  });
});

describe("an HTTP body's depth and size, measured on the text", () => {
  it("counts values exactly for JSON and stops at the first limit", () => {
    // The object, the array, 1, 2, {b}, "x,[y", [] : seven values.
    expect(exceedsJsonLimits('{"a":[1,2,{"b":"x,[y"}],"c":[]}', { maxDepth: 3, maxNodes: 7 })).toBeUndefined();
    expect(exceedsJsonLimits('{"a":[1,2,{"b":"x,[y"}],"c":[]}', { maxDepth: 3, maxNodes: 6 })).toBe("the body has more than 6 values");
    expect(exceedsJsonLimits('{"a":[[[[]]]]}', { maxDepth: 4, maxNodes: 100 })).toBe("the body nests deeper than 4 levels");
    expect(exceedsJsonLimits('"\\"[[[["', { maxDepth: 1, maxNodes: 1 })).toBeUndefined();
    expect(exceedsJsonLimits("[".repeat(1_000_000))).toBe("the body nests deeper than 32 levels");
  });
});
