import { afterAll, describe, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { beforePayload, script } from "./helpers.js";

/*
 * The runtime makes its value-type table (runtime/keys.ts) when a script first checks a key, not at install,
 * so script code may have replaced built-ins by then. The table must end up frozen as when it was made before
 * any script code: here a script turns Object.freeze into a no-op and Object.values into a spy, then checks a
 * key whose type is an object, and reads the table's fields object through Object.entries, which keys.ts calls.
 */

const pool = createSandboxPool({ workers: 1 });
afterAll(() => pool.close());

const TAMPERING = `
import { setKey, keys } from "hookbox";
export default {
  hooks: {
    beforeToolCall() {
      const isFrozen = Object.isFrozen;
      const ownKeys = Reflect.ownKeys;
      const entries = Object.entries;
      const values = Object.values;
      const handed = [];
      Object.freeze = (value) => value;
      Object.values = (value) => (handed.push(value), values(value));
      Object.entries = (value) => (handed.push(value), entries(value));
      const bag = {};
      setKey(bag, keys.turnMetadata.usage, { inputTokens: 1 });
      let refusal = "";
      try {
        setKey(bag, keys.turnMetadata.usage, { inputTokens: 1.5 });
      } catch (error) {
        refusal = error.message;
      }
      const unfrozen = [];
      const walk = (value, path) => {
        if (typeof value !== "object" || value === null) return;
        if (!isFrozen(value)) unfrozen.push(path);
        for (const name of ownKeys(value)) walk(value[name], path + "." + String(name));
      };
      // The fields object of the "usage" type, not the values checked against it.
      const fields = handed.filter((value) => value !== null && typeof value === "object" && typeof value.inputTokens === "object");
      fields.forEach((value, index) => walk(value, "fields" + index));
      return { action: "deny", reason: JSON.stringify({ fields: fields.length, unfrozen, refusal, stored: bag["hookbox.usage@v1"] }) };
    },
  },
};
`;

describe("the runtime's value-type table, made on first use", () => {
  it("is frozen all the way down even when a script replaced Object.freeze and Object.values first", async () => {
    const tenant = pool.tenant("value-types");
    const manifests = await tenant.load([script("tamper", TAMPERING)]);
    const run = await tenant.openRun({ runId: "value-types", scripts: manifests });
    const decision = (await run.callHook("tamper", "beforeToolCall", beforePayload())) as { reason: string };
    const seen = JSON.parse(decision.reason) as { fields: number; unfrozen: string[]; refusal: string; stored: unknown };
    expect(seen.fields).toBeGreaterThan(0);
    expect(seen.unfrozen).toEqual([]);
    expect(seen.refusal).toContain("$.inputTokens: expected integer");
    expect(seen.stored).toEqual({ inputTokens: 1 });
  });
});
