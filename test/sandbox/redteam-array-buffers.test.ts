import { describe, expect, it } from "vitest";
import { beforePayload } from "./helpers.js";
import { attacker, redTeamPool } from "./redteam-helpers.js";
import { measureTree } from "../../src/sandbox/worker-memory.js";

/*
 * Red team: memory outside the V8 heap. isolated-vm counts array-buffer allocations against the isolate's
 * limit, except resizable buffers, whose pages V8 commits itself (runtime/array-buffers.ts refuses them).
 * Each attack holds what it got in a global of its run and must end within the tenant's limits, with the
 * worker's memory (measured by the host) bounded by them.
 */
const { pool, good } = redTeamPool({ workers: 1 });
const MB = 1048576;
const limits = { cpuMs: 2000, wallMs: 5000, memoryMb: 64 };

/** The worker's memory now, as the host measures it (its whole tree under bwrap). */
function workerRss(): number {
  return measureTree(pool.workers()[0]!.launchedPid!).bytes;
}

const resizable = (make: string) =>
  `globalThis.held = []; const AB = ${make};
   for (let i = 0; i < 4; i++) { const b = new AB(1, { maxByteLength: 128 * ${MB} }); b.resize(128 * ${MB}); new Uint8Array(b).fill(1); held.push(b); }`;

describe("red team: array buffers", () => {
  it.each([
    ["resizable, from the global", resizable("ArrayBuffer")],
    ["resizable, from a buffer's constructor", resizable("new Uint8Array(1).buffer.constructor")],
    ["resizable, from the prototype", resizable("Object.getPrototypeOf(new DataView(new ArrayBuffer(1)).buffer).constructor")],
    ["resizable, through a subclass", resizable("class extends ArrayBuffer {}")],
    ["resizable, through Reflect.construct", resizable("function (n, o) { return Reflect.construct(ArrayBuffer, [n, o]); }")],
    [
      "resizable, with options that answer differently when read twice",
      `let reads = 0; const options = { get maxByteLength() { return reads++ === 0 ? undefined : 128 * ${MB}; } };
       const b = new ArrayBuffer(1, options); globalThis.held = b; b.resize(128 * ${MB});`,
    ],
    ["fixed buffers past the limit", `globalThis.held = []; for (let i = 0; i < 16; i++) held.push(new Uint8Array(32 * ${MB}).fill(1));`],
    ["one huge typed array", `globalThis.held = new Float64Array(2 ** 28);`],
    [
      "transfer to a bigger length",
      `globalThis.held = []; for (let i = 0; i < 16; i++) held.push(new ArrayBuffer(1).transfer(32 * ${MB}));`,
    ],
    [
      "a buffer's slice copied past the limit",
      `const big = new ArrayBuffer(48 * ${MB}); globalThis.held = [big.slice(0), big.slice(0), big.slice(0)];`,
    ],
  ])("%s: fails within the tenant's limits, and the worker stays bounded", async (_label, attack) => {
    const { run } = await attacker(
      pool,
      `{ hooks: { beforeToolCall() { ${attack} return { action: "deny", reason: "held" }; } } }`,
      limits,
    );
    const before = workerRss();
    const outcome = await run.callHook("attack", "beforeToolCall", beforePayload()).then(
      (value) => ({ value }),
      (error: { code: string; message: string }) => ({ error }),
    );
    expect(outcome, "the attack must not hold what it asked for").toHaveProperty("error");
    const error = (outcome as { error: { code: string; message: string } }).error;
    // A RangeError the script could catch (the allocation failed), or the isolate's limit.
    expect(["SCRIPT_ERROR", "SANDBOX_MEMORY"]).toContain(error.code);
    if (error.code === "SCRIPT_ERROR") expect(error.message).toMatch(/RangeError|TypeError/);
    // The host's own measure of the worker: the isolate's limit is a guideline (2-3x), not 512 MB more.
    const grownMb = (workerRss() - before) / MB;
    expect(grownMb, `the worker grew ${grownMb.toFixed(0)} MB`).toBeLessThan(3 * limits.memoryMb);
    await run.close();
    await good.served();
  });

  it("a fixed-length buffer still works as ever", async () => {
    const { run } = await attacker(
      pool,
      `{ hooks: { beforeToolCall() {
        const b = new ArrayBuffer(8); new DataView(b).setUint8(0, 7);
        const sub = new (class extends ArrayBuffer {})(4);
        return { action: "deny", reason: [new Uint8Array(b)[0], b.resizable, b instanceof ArrayBuffer, sub instanceof ArrayBuffer,
          b.constructor === ArrayBuffer, ArrayBuffer.isView(new Uint8Array(1)), ArrayBuffer.length, b.slice(0, 2).byteLength,
          b.transfer(16).byteLength].join(",") };
      } } }`,
      limits,
    );
    expect(await run.callHook("attack", "beforeToolCall", beforePayload())).toEqual({
      action: "deny",
      reason: "7,false,true,true,true,true,1,2,16",
    });
  });
});
