import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { validateHookReturn } from "../../src/contracts/validate-hook-return.js";
import { hookReturnSchemas } from "../../src/contracts/hook-returns.js";
import { isCommonHookReturn, validateGuestHookReturn } from "../../src/sandbox/validate.js";
import { isHookboxError } from "../../src/errors.js";
import { HOOK_NAMES, type HookName } from "../../src/turns/keys.gen.js";
import { propertyParameters } from "../helpers/property.js";
import type { Json } from "../../src/turns/json.js";

/*
 * Hook-return validation over the class of inputs: any JSON value, and valid returns mutated the ways a
 * script gets them wrong (a key too many or too few, a value of the wrong type, an unknown action). The
 * validator either accepts a value that keeps the contract (the full zod schema says so) or throws
 * HOOK_CONTRACT naming a JSON path; nothing else. The sandbox's fast path (JSON leaves trusted) decides
 * exactly as the full check does.
 */

const FIELDS = ["action", "args", "result", "reason", "timeoutMs", "error", "backoffMs", "prompt", "message"];
const ACTIONS = ["proceed", "skip", "deny", "abort", "ask", "retry", "fail", "continue", "nope", ""];

/** A plausible field value: the right type for some branch, or not. */
const fieldValue = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(...ACTIONS),
  fc.integer({ min: -5, max: 5000 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
);

/** Objects made of the contracts' own field names (most of them near a branch), sometimes with a stray key. */
const nearContract = fc
  .tuple(
    fc.subarray(FIELDS, { minLength: 0, maxLength: 4 }),
    fc.array(fieldValue, { minLength: 4, maxLength: 4 }),
    fc.option(fc.string({ minLength: 1, maxLength: 8 }), { freq: 4 }),
    fc.constantFrom(...ACTIONS),
  )
  .map(([keys, values, stray, action]) => {
    const value: Record<string, unknown> = {};
    keys.forEach((key, i) => (value[key] = key === "action" && i % 2 === 0 ? action : values[i]));
    if (stray !== null) value[stray] = values[0];
    return value;
  });

const anyReturn = fc.oneof(nearContract, fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined));

/** The outcome of one validation: the accepted value, or the contract error's path. */
function outcome(validate: () => unknown): { ok: true; value: unknown } | { ok: false; path: string } {
  try {
    return { ok: true, value: validate() };
  } catch (error) {
    expect(isHookboxError(error), String(error)).toBe(true);
    const contract = error as { code: string; details: { path?: unknown }; message: string };
    expect(contract.code).toBe("HOOK_CONTRACT");
    expect(String(contract.details.path)).toMatch(/^\$/);
    expect(contract.message.length).toBeLessThan(1000);
    return { ok: false, path: String(contract.details.path) };
  }
}

describe("hook-return validation (property)", () => {
  it.each(HOOK_NAMES.map((hook) => [hook]))("%s: accepts only what keeps the contract, refuses with HOOK_CONTRACT and a path", (hook) => {
    fc.assert(
      fc.property(anyReturn, (value) => {
        const result = outcome(() => validateHookReturn("policy", hook as HookName, value));
        if (result.ok) expect(hookReturnSchemas[hook as HookName].safeParse(result.value).success).toBe(true);
        else expect(hookReturnSchemas[hook as HookName].safeParse(value).success).toBe(false);
      }),
      propertyParameters(400),
    );
  });

  it.each(HOOK_NAMES.map((hook) => [hook]))("%s: the sandbox's fast path decides as the full check does", (hook) => {
    fc.assert(
      fc.property(anyReturn, (value) => {
        // What the sandbox gets: the text JSON.stringify made inside the isolate, parsed.
        const text = value === undefined ? undefined : JSON.stringify(value);
        const parsed = text === undefined ? undefined : JSON.parse(text);
        const full = outcome(() => validateHookReturn("policy", hook as HookName, parsed));
        const fast = outcome(() => validateGuestHookReturn("policy", hook as HookName, parsed));
        expect(fast.ok).toBe(full.ok);
        if (full.ok && fast.ok) expect(fast.value).toEqual(full.value);
      }),
      propertyParameters(400),
    );
  });

  /** Values near the common returns: `action` mostly "proceed", `result`/`error`/`args` of any type, now and then a stray key. */
  const nearCommon = fc
    .tuple(
      fc.subarray(["action", "args", "result", "error", "reason", "__proto__"], { minLength: 0, maxLength: 4 }),
      fc.array(fc.oneof(fieldValue, fc.constant("proceed")), { minLength: 6, maxLength: 6 }),
      fc.boolean(),
    )
    .map(([keys, values, proceed]) => {
      const text = `{${keys.map((key, i) => `${JSON.stringify(key)}:${JSON.stringify(key === "action" && proceed ? "proceed" : values[i])}`).join(",")}}`;
      return JSON.parse(text) as Json; // as the sandbox's value arrives: JSON.parse output, `__proto__` an own key
    });

  it.each(HOOK_NAMES.map((hook) => [hook]))(
    "%s: the hand check of the common returns accepts only what the contract accepts unchanged",
    (hook) => {
      fc.assert(
        fc.property(fc.oneof(nearCommon, anyReturn as fc.Arbitrary<Json | undefined>), (value) => {
          if (!isCommonHookReturn(hook as HookName, value)) return;
          const parsed = hookReturnSchemas[hook as HookName].safeParse(value);
          expect(parsed.success).toBe(true);
          expect(parsed.data).toStrictEqual(value);
        }),
        propertyParameters(1000),
      );
    },
  );

  it("the hand check takes the returns hooks make most (so they skip zod)", () => {
    const common: [HookName, Json | undefined][] = [
      ["beforeToolCall", undefined],
      ["beforeToolCall", { action: "proceed" }],
      ["beforeToolCall", { action: "proceed", args: { n: 1 } }],
      ["afterToolCall", { result: { n: 3, checked: true } }],
      ["afterToolCall", { result: "text", error: null }],
      ["afterToolCall", { error: "broken" }],
      ["afterToolCall", {}],
      ["onToolError", undefined],
    ];
    for (const [hook, value] of common) expect(isCommonHookReturn(hook, value), JSON.stringify(value)).toBe(true);
    const other: [HookName, Json][] = [
      ["beforeToolCall", { action: "deny", reason: "no" }],
      ["beforeToolCall", { action: "proceed", args: [1] }],
      ["beforeToolCall", { action: "proceed", reason: "x" }],
      ["afterToolCall", { result: 1, error: 5 }],
      ["afterToolCall", { action: "abort", reason: "x" }],
      ["afterToolCall", [{ result: 1 }]],
      ["onToolError", { action: "fail" }],
    ];
    for (const [hook, value] of other) expect(isCommonHookReturn(hook, value), JSON.stringify(value)).toBe(false);
  });
});
