import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandboxPool, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import { MemoryKv } from "../../src/store/memory-kv.js";
import { hookRuntime, runLoggedLines } from "./hook-runtime.js";

/*
 * ctx.fetch, ctx.kv and ctx.model as properties of a ctx (docs/capabilities.md): not enumerable (spreading or
 * serializing a ctx never carries them), the same object at every read within a callback, assignable like a
 * writable property, and each callback's own: a ctx kept from an earlier callback still names that callback, whose
 * capabilities refuse once it finished. Through real sandbox workers, with a real kv.
 */

let pool: SupervisedSandboxPool;
beforeAll(() => {
  pool = createSandboxPool({ workers: 1 });
});
afterAll(async () => {
  await pool?.close();
});

const script = `import { defineScript } from "hookbox";
let earlier: any;
export default defineScript({
  name: "properties",
  hooks: {
    async beforeToolCall(p) {
      const names = ["fetch", "kv", "model"];
      const accessor = Object.getOwnPropertyDescriptor(p, "kv") as PropertyDescriptor;
      const facts: Record<string, unknown> = {
        enumerable: names.filter((name) => Object.keys(p).includes(name) || Object.getOwnPropertyDescriptor(p, name)?.enumerable),
        inJson: names.filter((name) => JSON.stringify(p).includes('"' + name + '"')),
        inSpread: names.filter((name) => name in { ...p }),
        own: names.filter((name) => Object.prototype.hasOwnProperty.call(p, name)),
        types: [typeof p.fetch, typeof p.kv, typeof p.kv.get, typeof p.model, typeof p.model.generate],
        sameEachRead: p.fetch === p.fetch && p.kv === p.kv && p.model === p.model,
        frozen: Object.isFrozen(p.kv) && Object.isFrozen(p.model),
        // The getter answers only a ctx's own capabilities.
        foreignThis: accessor.get === undefined ? "data" : String(accessor.get.call({ kv: 1 })),
      };
      await p.kv.set("seen", p.call.id);
      facts.kvRoundTrip = await p.kv.get("seen");
      facts.earlier = earlier === undefined ? "none" : "kept";
      earlier = p;
      p.model = 7;
      facts.assigned = p.model === 7 && !Object.keys(p).includes("model");
      console.log(JSON.stringify(facts));
      return undefined;
    },
    async afterToolCall(p) {
      // The ctx of the call's beforeToolCall names that callback, which finished: its capabilities refuse, while
      // this callback's own answer.
      const before = await earlier.kv.get("seen").then(() => "answered", (error: any) => error.code);
      const own = await p.kv.get("seen");
      console.log(JSON.stringify({ before, own, distinct: earlier.kv !== p.kv }));
      return undefined;
    },
  },
});
`;

describe("a ctx's capability properties", () => {
  it("are hidden from keys, JSON and spreading, stable within a callback, assignable, and each callback's own", async () => {
    const runtime = await hookRuntime({
      pool,
      tenant: "ctx-properties",
      script,
      args: {},
      capabilities: {},
      kv: new MemoryKv(),
    });
    const [first, after] = await runLoggedLines(runtime, "ctx-properties-1");
    expect(first).toEqual({
      enumerable: [],
      inJson: [],
      inSpread: [],
      own: ["fetch", "kv", "model"],
      types: ["function", "object", "function", "object", "function"],
      sameEachRead: true,
      frozen: true,
      foreignThis: "undefined",
      kvRoundTrip: "c1",
      earlier: "none",
      assigned: true,
    });
    expect(after).toEqual({ before: "CAPABILITY_DENIED", own: "c1", distinct: true });
    // A second run in the same session and worker: the script's module state is the run's own (a fresh
    // context), so nothing of the first run's ctx is there.
    expect(((await runLoggedLines(runtime, "ctx-properties-1"))[0] as { earlier: string }).earlier).toBe("none");
  });
});
