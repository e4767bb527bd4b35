import { afterAll, describe, expect, it } from "vitest";
import { LAZY_RESULT_MIN_BYTES } from "../../src/sandbox/call-args.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { afterPayload, script } from "./helpers.js";

/*
 * A big tool result reaches afterToolCall unparsed (runtime/lazy-json.ts) and, if returned untouched, goes
 * back as the text the host sent. Whatever a script does with it must behave as with a plain parsed value.
 */

const pool = createSandboxPool({ workers: 1 });
afterAll(() => pool.close());

/** An object result comfortably over the lazy threshold. */
function bigResult(tag = "r") {
  const items = Array.from({ length: 200 }, (_, i) => ({ id: `${tag}-${i}`, price: i * 1.5, tags: ["a", "b"], note: "x".repeat(40) }));
  expect(JSON.stringify({ items }).length).toBeGreaterThan(LAZY_RESULT_MIN_BYTES);
  return { items, total: 200 };
}

async function openHooks(name: string, hooks: string) {
  const tenant = pool.tenant(name);
  const manifests = await tenant.load([script("lazy", `export default { hooks: { ${hooks} } };`)]);
  return tenant.openRun({ runId: name, scripts: manifests });
}

describe("big results in afterToolCall", () => {
  it("pass through untouched from sync and async hooks; other returned properties are kept", async () => {
    const run = await openHooks(
      "lazy-pass",
      `afterToolCall(p) {
        if (p.call.name === "async") return Promise.resolve().then(() => ({ result: p.result }));
        if (p.call.name === "extra") return { result: p.result, extra: 1 };
        return { result: p.result };
      }`,
    );
    const named = (name: string, result: unknown) => ({
      ...afterPayload(result),
      call: { id: "c", name, args: {}, origin: "script" as const },
    });
    const result = bigResult();
    expect(await run.callHook("lazy", "afterToolCall", afterPayload(result))).toEqual({ result });
    expect(await run.callHook("lazy", "afterToolCall", named("async", result))).toEqual({ result });
    // The property next to the passed-through result still reaches the contract check.
    const error = await run.callHook("lazy", "afterToolCall", named("extra", result)).catch((thrown: Error) => thrown);
    expect(error).toMatchObject({ code: "HOOK_CONTRACT" });
    expect((error as Error).message).toContain('"extra"');
  });

  it("a result the script changes goes back changed, not as the text it came as", async () => {
    const run = await openHooks(
      "lazy-change",
      `afterToolCall(p) {
        if (p.call.name === "push") p.result.items.push({ id: "added" });
        if (p.call.name === "set") p.result.total = 1;
        if (p.call.name === "delete") delete p.result.total;
        return { result: p.result };
      }`,
    );
    const named = (name: string) => ({ ...afterPayload(bigResult()), call: { id: "c", name, args: {}, origin: "script" as const } });
    const pushed = (await run.callHook("lazy", "afterToolCall", named("push"))) as { result: { items: unknown[] } };
    expect(pushed.result.items).toHaveLength(201);
    expect(pushed.result.items.at(-1)).toEqual({ id: "added" });
    expect(await run.callHook("lazy", "afterToolCall", named("set"))).toMatchObject({ result: { total: 1 } });
    expect(((await run.callHook("lazy", "afterToolCall", named("delete"))) as { result: object }).result).not.toHaveProperty("total");
  });

  it("a hook that passes results through and then changes one returns each as it made it", async () => {
    // After a pass-through the host parses the next big result ahead (while it waits): never used for a changed one.
    const run = await openHooks(
      "lazy-alternate",
      `afterToolCall(p) { if (p.call.name === "touch") p.result.total = -1; return { result: p.result }; }`,
    );
    const named = (name: string, result: object) => ({
      ...afterPayload(result),
      call: { id: "c", name, args: {}, origin: "script" as const },
    });
    for (const [index, name] of ["pass", "pass", "touch", "pass", "touch"].entries()) {
      const result = bigResult(`${name}${index}`);
      const returned = (await run.callHook("lazy", "afterToolCall", named(name, result))) as {
        result: { total: number; items: { id: string }[] };
      };
      expect(returned.result.total).toBe(name === "touch" ? -1 : 200);
      expect(returned.result.items[0]!.id).toBe(`${name}${index}-0`);
    }
  });

  it("behaves as a plain parsed value under reflection, spreading, freezing and JSON", async () => {
    const run = await openHooks(
      "lazy-reflect",
      `afterToolCall(p) {
        const r = p.result;
        const seen = {
          isArray: Array.isArray(r),
          keys: Object.keys(r),
          has: "items" in r,
          proto: Object.getPrototypeOf(r) === Object.prototype,
          isObject: r instanceof Object,
          forIn: (() => { const k = []; for (const key in r) k.push(key); return k; })(),
          spread: { ...r }.total,
          json: JSON.parse(JSON.stringify(r)).items.length,
          same: r === p.result,
        };
        Object.freeze(r);
        seen.frozen = Object.isFrozen(r);
        try { r.total = 0; } catch {}
        return { result: { seen, total: r.total } };
      }`,
    );
    expect(await run.callHook("lazy", "afterToolCall", afterPayload(bigResult()))).toEqual({
      result: {
        seen: {
          isArray: false,
          keys: ["items", "total"],
          has: true,
          proto: true,
          isObject: true,
          forIn: ["items", "total"],
          spread: 200,
          json: 200,
          same: true,
          frozen: true,
        },
        total: 200,
      },
    });
  });

  it("arrays, a result with its own toJSON key, and a result returned twice inside another value", async () => {
    const run = await openHooks(
      "lazy-shapes",
      `afterToolCall(p) {
        if (p.call.name === "array") return { result: { isArray: Array.isArray(p.result), length: p.result.length, back: p.result } };
        if (p.call.name === "twice") return { result: { again: p.result, also: p.result } };
        return { result: p.result };
      }`,
    );
    const named = (name: string, result: unknown) => ({
      ...afterPayload(result),
      call: { id: "c", name, args: {}, origin: "script" as const },
    });
    const array = bigResult().items;
    expect(await run.callHook("lazy", "afterToolCall", named("array", array))).toEqual({
      result: { isArray: true, length: 200, back: array },
    });
    const withToJSON = { ...bigResult(), toJSON: "just a key" };
    expect(await run.callHook("lazy", "afterToolCall", named("plain", withToJSON))).toEqual({ result: withToJSON });
    const result = bigResult();
    expect(await run.callHook("lazy", "afterToolCall", named("twice", result))).toEqual({ result: { again: result, also: result } });
    expect(await run.callHook("lazy", "afterToolCall", named("plain", array))).toEqual({ result: array });
  });

  it("an undefined property next to the result (or in any returned object) is left out, as JSON does", async () => {
    const run = await openHooks(
      "lazy-undefined",
      `afterToolCall(p) { return p.call.name === "small" ? { result: { a: 1, b: undefined }, note: undefined } : { result: p.result, note: undefined }; }`,
    );
    const result = bigResult();
    expect(await run.callHook("lazy", "afterToolCall", afterPayload(result))).toEqual({ result });
    const small = { ...afterPayload({ a: 1 }), call: { id: "c", name: "small", args: {}, origin: "script" as const } };
    expect(await run.callHook("lazy", "afterToolCall", small)).toEqual({ result: { a: 1 } });
  });

  it("a script may keep the value and read it in a later call", async () => {
    const run = await openHooks(
      "lazy-keep",
      `afterToolCall(p) {
        if (p.call.name === "keep") { globalThis.kept = p.result; return; }
        return { result: { keptTotal: globalThis.kept.total, first: globalThis.kept.items[0].id } };
      }`,
    );
    const named = (name: string) => ({ ...afterPayload(bigResult(name)), call: { id: "c", name, args: {}, origin: "script" as const } });
    expect(await run.callHook("lazy", "afterToolCall", named("keep"))).toBeUndefined();
    expect(await run.callHook("lazy", "afterToolCall", named("read"))).toEqual({ result: { keptTotal: 200, first: "keep-0" } });
  });

  it("a getter a script defines on it runs once, inside the sandbox; its value is what goes back", async () => {
    // The getter returns how many times it has run: 1 means it was read exactly once, while serializing.
    const run = await openHooks(
      "lazy-getter",
      `afterToolCall(p) {
        let reads = 0;
        Object.defineProperty(p.result, "total", { get() { return ++reads; }, enumerable: true, configurable: true });
        return { result: p.result };
      }`,
    );
    const returned = (await run.callHook("lazy", "afterToolCall", afterPayload(bigResult()))) as { result: { total: number } };
    expect(returned.result.total).toBe(1);
    expect(returned.result).toHaveProperty("items");
  });

  it("a polluted Object.prototype.toJSON applies to it as to any object", async () => {
    const run = await openHooks(
      "lazy-polluted",
      `afterToolCall(p) { Object.prototype.toJSON = function () { return "replaced"; }; return { result: p.result }; }`,
    );
    // JSON.stringify asks every object (the returned one first) for toJSON: the whole value becomes "replaced",
    // and a string is not a valid afterToolCall return.
    const error = await run.callHook("lazy", "afterToolCall", afterPayload(bigResult())).catch((thrown: { code: string }) => thrown);
    expect(error).toMatchObject({ code: "HOOK_CONTRACT" });
  });
});
