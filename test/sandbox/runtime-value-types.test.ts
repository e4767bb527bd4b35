import { afterAll, describe, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { beforePayload, script } from "./helpers.js";

/*
 * The runtime checks typed keys (runtime/keys.ts) in the script's own context, after script code may have replaced
 * built-ins, and makes its value-type table on first use. It uses only built-ins captured before any script code
 * ran: here a script replaces every built-in a naive check would call with one that lies (or records that it was
 * called), and the checks must still refuse what they refuse and never call the replacements.
 */

const pool = createSandboxPool({ workers: 1 });
afterAll(() => pool.close());

const TAMPERING = `
import { setKey, keys } from "hookbox";
export default {
  hooks: {
    beforeToolCall() {
      const called = [];
      const lie = (name, answer) => function () { called.push(name); return answer; };
      Object.freeze = lie("Object.freeze", undefined);
      Object.values = lie("Object.values", []);
      Object.entries = lie("Object.entries", []);
      Object.keys = lie("Object.keys", []);
      Object.getPrototypeOf = lie("Object.getPrototypeOf", null);
      Object.hasOwn = lie("Object.hasOwn", true);
      Number.isInteger = lie("Number.isInteger", true);
      Number.isFinite = lie("Number.isFinite", true);
      Array.isArray = lie("Array.isArray", false);
      Array.prototype.includes = lie("Array.prototype.includes", true);
      Array.prototype.find = lie("Array.prototype.find", undefined);
      Array.prototype.map = lie("Array.prototype.map", []);
      Array.prototype[Symbol.iterator] = lie("Array.prototype[Symbol.iterator]", { next: () => ({ done: true }) });
      Set.prototype.has = lie("Set.prototype.has", false);
      Set.prototype.add = lie("Set.prototype.add", undefined);
      RegExp.prototype.test = lie("RegExp.prototype.test", true);
      RegExp.prototype.exec = lie("RegExp.prototype.exec", []);
      const refusal = (value) => {
        try {
          setKey({}, keys.turnMetadata.usage, value);
          return "stored";
        } catch (error) {
          return String(error.message);
        }
      };
      const bag = {};
      setKey(bag, keys.turnMetadata.usage, { inputTokens: 1 });
      const cyclic = { inputTokens: 1 };
      cyclic.self = cyclic;
      return { action: "deny", reason: JSON.stringify({
        called,
        fraction: refusal({ inputTokens: 1.5 }),
        unknownField: refusal({ inputTokens: 1, extra: 2 }),
        notAnObject: refusal([1]),
        infinite: refusal({ inputTokens: Infinity }),
        cyclic: refusal(cyclic),
        stored: bag["hookbox.usage@v1"],
      }) };
    },
  },
};
`;

describe("the runtime's typed-key checks in a context the script tampered with", () => {
  it("refuse what they refuse and call none of the built-ins the script replaced", async () => {
    const tenant = pool.tenant("value-types");
    const manifests = await tenant.load([script("tamper", TAMPERING)]);
    const run = await tenant.openRun({ runId: "value-types", scripts: manifests });
    const decision = (await run.callHook("tamper", "beforeToolCall", beforePayload())) as { reason: string };
    const seen = JSON.parse(decision.reason) as Record<string, unknown>;
    expect(seen.called).toEqual([]);
    expect(seen.fraction).toContain("$.inputTokens: expected integer");
    expect(seen.unknownField).toContain("$.extra: unknown field");
    expect(seen.notAnObject).toContain("expected object, got list");
    expect(seen.infinite).toContain("$.inputTokens: Infinity is not a JSON number");
    expect(seen.cyclic).toContain("$.self: circular reference is not JSON");
    expect(seen.stored).toEqual({ inputTokens: 1 });
  });
});
