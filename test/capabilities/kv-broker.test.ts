import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { RunCapabilities, type RunCapabilitiesOptions } from "../../src/capabilities/broker.js";
import { DEFAULT_CAPABILITY_LIMITS, KV_MAX_VALUE_BYTES, type CapabilityLimits } from "../../src/capabilities/grants.js";
import { KV_ENTRY_OVERHEAD_BYTES, type KvStore } from "../../src/store/kv.js";
import { openStore } from "../../src/store/open.js";
import type { Store } from "../../src/store/types.js";
import type { CapabilityEvent } from "../../src/events/types.js";
import { tmp } from "../helpers/harness.js";

/*
 * ctx.kv on the host, in the test's own process: requests as a script's runtime sends them (JSON text) to a run's
 * broker, answered from a real SQLite store in a temp file. The rules are docs/capabilities.md's "ctx.kv".
 */

let store: Store;
beforeAll(() => {
  store = openStore(join(tmp("hookbox-kv-broker-"), "store.db"));
});
afterAll(() => store?.close());

interface Refusal {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** A run's broker for `tenant`: `call` sends one request and answers its result, or the refusal it threw. */
function run(tenant: string, options: { limits?: Partial<CapabilityLimits>; clock?: { now: number }; kv?: boolean } = {}) {
  const events: CapabilityEvent[] = [];
  const settings: RunCapabilitiesOptions = {
    tenant,
    limits: { ...DEFAULT_CAPABILITY_LIMITS, ...options.limits },
    emit: (event) => events.push(event),
    signal: new AbortController().signal,
    ...(options.kv === false ? {} : { kv: store.kv }),
    ...(options.clock ? { now: () => options.clock!.now } : {}),
  };
  const broker = new RunCapabilities(settings);
  const call = (request: Record<string, unknown>, script = "policy") =>
    broker.serve({ script, text: JSON.stringify({ kind: "kv", ...request }) });
  const refusal = (request: Record<string, unknown>, script = "policy"): Promise<Refusal> =>
    call(request, script).then(
      (answer) => {
        throw new Error(`expected a refusal, got ${JSON.stringify(answer)}`);
      },
      (error: Refusal) => ({ code: error.code, message: error.message, details: error.details }),
    );
  return { broker, events, call, refusal };
}

describe("ctx.kv through a run's broker, on a SQLite file", () => {
  it("get answers null for a missing key and the value as JSON after set; delete says whether the key existed", async () => {
    const kv = run("basics");
    expect(await kv.call({ op: "get", key: "missing" })).toBeNull();
    expect(await kv.call({ op: "set", key: "order", value: { id: "A17", items: [1, 2], note: null } })).toBeNull();
    expect(await kv.call({ op: "get", key: "order" })).toEqual({ id: "A17", items: [1, 2], note: null });
    await kv.call({ op: "set", key: "flag", value: false });
    expect(await kv.call({ op: "get", key: "flag" })).toBe(false);
    expect(await kv.call({ op: "delete", key: "order" })).toBe(true);
    expect(await kv.call({ op: "delete", key: "order" })).toBe(false);
    expect(await kv.call({ op: "get", key: "order" })).toBeNull();
  });

  it("ttlMs makes an entry disappear that long after the write, and not before", async () => {
    const clock = { now: 1_000_000 };
    const kv = run("ttl", { clock });
    await kv.call({ op: "set", key: "session", value: "s1", ttlMs: 5000 });
    await kv.call({ op: "set", key: "forever", value: "f" });
    clock.now += 4999;
    expect(await kv.call({ op: "get", key: "session" })).toBe("s1");
    clock.now += 1;
    expect(await kv.call({ op: "get", key: "session" })).toBeNull();
    clock.now += 10 * 365 * 86_400_000;
    expect(await kv.call({ op: "get", key: "forever" })).toBe("f");
    // An expired key is missing for delete and list too.
    await kv.call({ op: "set", key: "short", value: 1, ttlMs: 10 });
    clock.now += 10;
    expect(await kv.call({ op: "delete", key: "short" })).toBe(false);
    expect(await kv.call({ op: "list" })).toEqual({ keys: ["forever"] });
  });

  it("incr adds by (1 by default) atomically; its ttlMs applies only when it creates the key (a fixed window)", async () => {
    const clock = { now: 5_000_000 };
    const kv = run("incr", { clock });
    expect(await kv.call({ op: "incr", key: "refunds", ttlMs: 1000 })).toBe(1);
    clock.now += 600;
    expect(await kv.call({ op: "incr", key: "refunds", by: 5, ttlMs: 1000 })).toBe(6);
    expect(await kv.call({ op: "incr", key: "refunds", by: -2.5 })).toBe(3.5);
    // The window opened by the first incr ends 1000 ms after it, not after the later ones.
    clock.now += 400;
    expect(await kv.call({ op: "get", key: "refunds" })).toBeNull();
    expect(await kv.call({ op: "incr", key: "refunds" })).toBe(1);
    // Parallel increments of one run all count.
    const sums = await Promise.all(Array.from({ length: 20 }, () => kv.call({ op: "incr", key: "parallel" })));
    expect([...(sums as number[])].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
    await kv.call({ op: "set", key: "text", value: "seven" });
    expect(await kv.refusal({ op: "incr", key: "text" })).toMatchObject({
      code: "CAPABILITY_INVALID",
      message: 'ctx.kv.incr: the value of "text" is not a number',
    });
    expect(await kv.call({ op: "get", key: "text" })).toBe("seven");
  });

  it("compareAndSet writes only when the key holds expected (as JSON; null: missing), and its ttlMs applies to what it wrote", async () => {
    const clock = { now: 9_000_000 };
    const kv = run("cas", { clock });
    expect(await kv.call({ op: "compareAndSet", key: "lock", expected: null, value: { owner: "a", n: 1 }, ttlMs: 2000 })).toBe(true);
    expect(await kv.call({ op: "compareAndSet", key: "lock", expected: null, value: { owner: "b", n: 1 } })).toBe(false);
    expect(await kv.call({ op: "compareAndSet", key: "lock", expected: { owner: "b", n: 1 }, value: "x" })).toBe(false);
    // Object key order does not matter.
    expect(
      await kv.call({ op: "compareAndSet", key: "lock", expected: { n: 1, owner: "a" }, value: { owner: "a", n: 2 }, ttlMs: 500 }),
    ).toBe(true);
    expect(await kv.call({ op: "get", key: "lock" })).toEqual({ owner: "a", n: 2 });
    clock.now += 500;
    expect(await kv.call({ op: "get", key: "lock" })).toBeNull();
    // null matches the expired key, as get reads it.
    expect(await kv.call({ op: "compareAndSet", key: "lock", expected: null, value: [1, 2] })).toBe(true);
    expect(await kv.call({ op: "compareAndSet", key: "lock", expected: [2, 1], value: [3] })).toBe(false);
    expect(await kv.call({ op: "get", key: "lock" })).toEqual([1, 2]);
    // Of parallel claims on a missing key, exactly one wins.
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, index) => kv.call({ op: "compareAndSet", key: "claim", expected: null, value: index })),
    );
    expect(claims.filter((won) => won === true)).toHaveLength(1);
  });

  it("list: keys with the prefix in order, 100 a page, a cursor while there may be more", async () => {
    const kv = run("list");
    const keys = Array.from({ length: 205 }, (_, index) => `user:${String(index).padStart(3, "0")}`);
    for (const key of keys) await kv.call({ op: "set", key, value: 1 });
    await kv.call({ op: "set", key: "other", value: 1 });
    await kv.call({ op: "set", key: "user", value: 1 });

    const first = (await kv.call({ op: "list", prefix: "user:" })) as { keys: string[]; cursor?: string };
    expect(first.keys).toEqual(keys.slice(0, 100));
    expect(first.cursor).toBe(keys[99]);
    const second = (await kv.call({ op: "list", prefix: "user:", cursor: first.cursor })) as { keys: string[]; cursor?: string };
    expect(second.keys).toEqual(keys.slice(100, 200));
    const last = await kv.call({ op: "list", prefix: "user:", cursor: second.cursor });
    // The last page has no cursor at all (not an undefined one).
    expect(last).toStrictEqual({ keys: keys.slice(200) });
    expect(Object.keys(last as object)).toEqual(["keys"]);

    // Without a prefix: every key, in code-unit order.
    const all = (await kv.call({ op: "list" })) as { keys: string[] };
    expect(all.keys.slice(0, 3)).toEqual(["other", "user", "user:000"]);
    expect(await kv.call({ op: "list", prefix: "nothing" })).toStrictEqual({ keys: [] });
  });

  it("a value over 64 KiB of JSON is CAPABILITY_QUOTA naming the key and its bytes, and nothing is stored", async () => {
    const kv = run("value-limit");
    // The string's JSON is its characters and two quotes: exactly the limit, then one byte over.
    const atLimit = "v".repeat(KV_MAX_VALUE_BYTES - 2);
    expect(await kv.call({ op: "set", key: "big", value: atLimit })).toBeNull();
    expect(await kv.call({ op: "get", key: "big" })).toBe(atLimit);
    const over = await kv.refusal({ op: "set", key: "big", value: `${atLimit}v` });
    expect(over).toEqual({
      code: "CAPABILITY_QUOTA",
      message: `ctx.kv.set: the value of "big" is ${KV_MAX_VALUE_BYTES + 1} bytes of JSON, over the ${KV_MAX_VALUE_BYTES}-byte limit`,
      details: { key: "big" },
    });
    expect(await kv.call({ op: "get", key: "big" })).toBe(atLimit);
    // Bytes, not characters: 22,000 three-byte characters are 66,002 bytes of JSON.
    const wide = await kv.refusal({ op: "compareAndSet", key: "wide", expected: null, value: "€".repeat(22_000) });
    expect(wide).toMatchObject({
      code: "CAPABILITY_QUOTA",
      message: expect.stringMatching(/^ctx\.kv\.compareAndSet: the value of "wide" is 66002 bytes/),
    });
    expect(await kv.call({ op: "get", key: "wide" })).toBeNull();
  });

  it("the tenant's quota: a write past it is CAPABILITY_QUOTA and stores nothing; replacing counts only the difference", async () => {
    // Each entry: key (1 byte) + value JSON + 64 bytes of bookkeeping.
    const entry = (value: string) => 1 + JSON.stringify(value).length + KV_ENTRY_OVERHEAD_BYTES;
    const quotaBytes = 2 * entry("x".repeat(100));
    const kv = run("quota", { limits: { kvQuotaBytes: quotaBytes } });
    await kv.call({ op: "set", key: "a", value: "x".repeat(100) });
    await kv.call({ op: "set", key: "b", value: "x".repeat(100) });
    expect(await store.kv.usedBytes("quota")).toBe(quotaBytes);
    const refused = await kv.refusal({ op: "set", key: "c", value: "" });
    expect(refused.code).toBe("CAPABILITY_QUOTA");
    expect(await kv.call({ op: "get", key: "c" })).toBeNull();
    expect(await kv.refusal({ op: "incr", key: "c" })).toMatchObject({ code: "CAPABILITY_QUOTA" });
    expect(await kv.refusal({ op: "compareAndSet", key: "c", expected: null, value: 1 })).toMatchObject({ code: "CAPABILITY_QUOTA" });
    // Replacing b by a value of the same size fits; by a bigger one does not.
    await kv.call({ op: "set", key: "b", value: "y".repeat(100) });
    expect((await kv.refusal({ op: "set", key: "b", value: "y".repeat(101) })).code).toBe("CAPABILITY_QUOTA");
    expect(await kv.call({ op: "get", key: "b" })).toBe("y".repeat(100));
    // Deleting frees room.
    await kv.call({ op: "delete", key: "a" });
    expect(await kv.call({ op: "set", key: "c", value: "z" })).toBeNull();
  });

  it("tenants are isolated: one tenant's keys are invisible to another's get, list, delete, incr and compareAndSet", async () => {
    const acme = run("acme");
    const evil = run("evil");
    await acme.call({ op: "set", key: "secret", value: "acme's" });
    await acme.call({ op: "incr", key: "count", by: 41 });
    expect(await evil.call({ op: "get", key: "secret" })).toBeNull();
    expect(await evil.call({ op: "list" })).toStrictEqual({ keys: [] });
    expect(await evil.call({ op: "delete", key: "secret" })).toBe(false);
    expect(await evil.call({ op: "incr", key: "count" })).toBe(1);
    expect(await evil.call({ op: "compareAndSet", key: "secret", expected: null, value: "evil's" })).toBe(true);
    expect(await acme.call({ op: "get", key: "secret" })).toBe("acme's");
    expect(await acme.call({ op: "incr", key: "count" })).toBe(42);
    expect(await acme.call({ op: "list" })).toStrictEqual({ keys: ["count", "secret"] });
  });

  it("without the grant each operation is CAPABILITY_DENIED naming it and the tenant", async () => {
    const kv = run("ungranted", { kv: false });
    for (const op of ["get", "delete"])
      expect(await kv.refusal({ op, key: "k" })).toEqual({
        code: "CAPABILITY_DENIED",
        message: `ctx.kv.${op}: tenant ungranted is not granted ctx.kv`,
        details: {},
      });
    expect((await kv.refusal({ op: "list" })).message).toBe("ctx.kv.list: tenant ungranted is not granted ctx.kv");
  });

  it("every call is an event with its op and key, refused ones with their code", async () => {
    const kv = run("events");
    await kv.call({ op: "set", key: "k1", value: 1 }, "writer");
    await kv.call({ op: "list", prefix: "k" }, "reader");
    await kv.call({ op: "set", key: "k2", value: "x" });
    await kv.refusal({ op: "incr", key: "k2" });
    for (const event of kv.events) expect(event.durationMs).toBeGreaterThanOrEqual(0);
    expect(kv.events.map(({ durationMs: _, ...event }) => event)).toStrictEqual([
      { type: "capability", kind: "kv", script: "writer", ok: true, op: "set", key: "k1" },
      { type: "capability", kind: "kv", script: "reader", ok: true, op: "list" },
      { type: "capability", kind: "kv", script: "policy", ok: true, op: "set", key: "k2" },
      { type: "capability", kind: "kv", script: "policy", ok: false, op: "incr", key: "k2", errorCode: "CAPABILITY_INVALID" },
    ]);
  });

  it("what reaches the store: an expiry only with ttlMs, a cursor only when given, the tenant's quota and one clock", async () => {
    const writes: Record<string, unknown>[] = [];
    const recording: KvStore = {
      ...store.kv,
      get: (tenant, key, nowMs) => store.kv.get(tenant, key, nowMs),
      delete: (tenant, key, nowMs) => store.kv.delete(tenant, key, nowMs),
      usedBytes: (tenant) => store.kv.usedBytes(tenant),
      set: (tenant, key, value, options) => (writes.push({ op: "set", ...options }), store.kv.set(tenant, key, value, options)),
      incr: (tenant, key, by, options) => (writes.push({ op: "incr", by, ...options }), store.kv.incr(tenant, key, by, options)),
      compareAndSet: (tenant, key, expected, value, options) => (
        writes.push({ op: "compareAndSet", expected, ...options }),
        store.kv.compareAndSet(tenant, key, expected, value, options)
      ),
      list: (tenant, options) => (writes.push({ op: "list", ...options }), store.kv.list(tenant, options)),
    };
    const broker = new RunCapabilities({
      tenant: "recorded",
      kv: recording,
      limits: { ...DEFAULT_CAPABILITY_LIMITS, kvQuotaBytes: 4321 },
      emit: () => {},
      signal: new AbortController().signal,
      now: () => 7000,
    });
    const call = (request: object) => broker.serve({ script: "s", text: JSON.stringify({ kind: "kv", ...request }) });
    await call({ op: "set", key: "a", value: 1 });
    await call({ op: "set", key: "b", value: 1, ttlMs: 30 });
    await call({ op: "incr", key: "c" });
    await call({ op: "incr", key: "d", by: 2, ttlMs: 40 });
    await call({ op: "compareAndSet", key: "e", expected: null, value: 1 });
    await call({ op: "compareAndSet", key: "e", expected: { y: 1, x: [2] }, value: 2, ttlMs: 50 });
    await call({ op: "list" });
    await call({ op: "list", prefix: "a", cursor: "a" });
    expect(writes).toStrictEqual([
      { op: "set", quotaBytes: 4321, nowMs: 7000 },
      { op: "set", quotaBytes: 4321, nowMs: 7000, expiresMs: 7030 },
      { op: "incr", by: 1, quotaBytes: 4321, nowMs: 7000 },
      { op: "incr", by: 2, quotaBytes: 4321, nowMs: 7000, expiresMs: 7040 },
      { op: "compareAndSet", expected: null, quotaBytes: 4321, nowMs: 7000 },
      { op: "compareAndSet", expected: '{"y":1,"x":[2]}', quotaBytes: 4321, nowMs: 7000, expiresMs: 7050 },
      { op: "list", prefix: "", limit: 100, nowMs: 7000 },
      { op: "list", prefix: "a", limit: 100, nowMs: 7000, after: "a" },
    ]);
  });
});

describe("per-run counts: the first refusal past one is an event, later ones a count at the run's end", () => {
  it("maxKvOpsPerRun: the call past it is CAPABILITY_QUOTA naming the limit; refused calls count too", async () => {
    const kv = run("count", { limits: { maxKvOpsPerRun: 3 } });
    await kv.call({ op: "set", key: "a", value: 1 });
    await kv.refusal({ op: "incr", key: "missing-number" }).catch(() => undefined);
    await kv.call({ op: "get", key: "a" });
    await kv.call({ op: "get", key: "a" }).then(
      () => {
        throw new Error("the fourth call passed");
      },
      (error: Refusal) =>
        expect({ code: error.code, message: error.message, details: error.details }).toEqual({
          code: "CAPABILITY_QUOTA",
          message: "ctx.kv.get: this run already made 3 such calls, its limit",
          details: { limit: 3 },
        }),
    );
    // The count is per run: a new run of the same tenant starts from zero.
    expect(await run("count", { limits: { maxKvOpsPerRun: 3 } }).call({ op: "get", key: "a" })).toBe(1);
  });

  it("refusals past the count: one event for the first of the kind, then one per script and kind at close()", async () => {
    const kv = run("flood", { limits: { maxKvOpsPerRun: 1 } });
    await kv.call({ op: "set", key: "a", value: 1 }, "one");
    for (let index = 0; index < 5; index++) await kv.refusal({ op: "get", key: "a" }, "one");
    for (let index = 0; index < 3; index++) await kv.refusal({ op: "list" }, "two");
    const during = kv.events.filter((event) => !event.ok);
    expect(during).toHaveLength(1);
    expect(during[0]).toMatchObject({ script: "one", op: "get", errorCode: "CAPABILITY_QUOTA" });
    expect(during[0].refusals).toBeUndefined();
    kv.broker.close();
    expect(kv.events.slice(-2)).toEqual([
      { type: "capability", kind: "kv", script: "one", ok: false, durationMs: 0, errorCode: "CAPABILITY_QUOTA", refusals: 4 },
      { type: "capability", kind: "kv", script: "two", ok: false, durationMs: 0, errorCode: "CAPABILITY_QUOTA", refusals: 3 },
    ]);
    // Reported once: a second close adds nothing.
    const count = kv.events.length;
    kv.broker.close();
    expect(kv.events).toHaveLength(count);
  });

  it("each kind has its own count and its own first reported refusal", async () => {
    const events: CapabilityEvent[] = [];
    const broker = new RunCapabilities({
      tenant: "kinds",
      kv: store.kv,
      limits: { ...DEFAULT_CAPABILITY_LIMITS, maxKvOpsPerRun: 1, maxFetchesPerRun: 1 },
      emit: (event) => events.push(event),
      signal: new AbortController().signal,
    });
    const refused = (request: object) => broker.serve({ script: "s", text: JSON.stringify(request) }).catch((error: Refusal) => error.code);
    expect(await refused({ kind: "kv", op: "get", key: "k" })).toBeNull();
    expect(await refused({ kind: "fetch", url: "https://example.com/" })).toBe("CAPABILITY_DENIED");
    expect(await refused({ kind: "kv", op: "get", key: "k" })).toBe("CAPABILITY_QUOTA");
    expect(await refused({ kind: "fetch", url: "https://example.com/" })).toBe("CAPABILITY_QUOTA");
    expect(await refused({ kind: "kv", op: "get", key: "k" })).toBe("CAPABILITY_QUOTA");
    expect(events.map((event) => [event.kind, event.errorCode ?? "ok"])).toEqual([
      ["kv", "ok"],
      ["fetch", "CAPABILITY_DENIED"],
      ["kv", "CAPABILITY_QUOTA"],
      ["fetch", "CAPABILITY_QUOTA"],
    ]);
    broker.close();
    expect(events.at(-1)).toMatchObject({ kind: "kv", refusals: 1 });
    expect(events).toHaveLength(5);
  });
});
