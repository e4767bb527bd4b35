import { describe, expect, it } from "vitest";
import { beforePayload } from "./helpers.js";
import { attackLimits, attacker, redTeamPool } from "./redteam-helpers.js";

/*
 * Red team: the objects the runtime makes for a script after its code ran (a capability's refusal, the errors
 * of next() and of ctx) are made with prototype-less descriptors and dictionaries, so what a script put on
 * Object.prototype (a `get` or `value`, as data or as an accessor) cannot stop them from being made: the
 * script still gets its refusal, with its code, instead of a callback left waiting for an answer that was lost.
 */
const { pool, good } = redTeamPool({ workers: 1 });

const TAMPERING: Record<string, string> = {
  "a `get` function on Object.prototype": `Object.defineProperty(Object.prototype, "get", { value: function () {}, configurable: true });`,
  "a throwing `enumerable` accessor on Object.prototype": `Object.defineProperty(Object.prototype, "enumerable", { get() { throw new Error("no"); }, configurable: true });`,
  "a throwing `set` accessor on Object.prototype": `Object.defineProperty(Object.prototype, "set", { get() { throw new Error("no"); }, configurable: true });`,
};

describe("red team: runtime-made objects under a tampered Object.prototype", () => {
  for (const [name, tampering] of Object.entries(TAMPERING)) {
    it(`${name}: a refused capability still reaches the script as CAPABILITY_DENIED`, async () => {
      const { run } = await attacker(
        pool,
        `{ hooks: { async beforeToolCall(p) {
          ${tampering}
          try { await p.kv.get("k"); return { action: "proceed" }; }
          catch (error) { return { action: "deny", reason: String(error.code) }; }
        } } }`,
        attackLimits,
      );
      // The run has no capability broker: the host refuses every capability, and the runtime makes that error.
      expect(await run.callHook("attack", "beforeToolCall", beforePayload())).toEqual({ action: "deny", reason: "CAPABILITY_DENIED" });
      await good.served();
    });
  }
});
