import { describe, expect, it } from "vitest";
import { KV_ENTRY_OVERHEAD_BYTES } from "../../src/store/kv.js";
import { allStores } from "./stores.js";

/* The kv contract, the same for every store: SQLite, memory and PostgreSQL. */

const stores = allStores;

describe.each(stores)("%s kv", (_name, open) => {
  it("keeps tenants apart, expires entries, pages keys in order and counts bytes", async () => {
    const store = await open();
    const kv = store.kv;
    await kv.set("acme", "a", '{"x":1}', { quotaBytes: 10_000, nowMs: 1000 });
    await kv.set("acme", "b", "2", { quotaBytes: 10_000, nowMs: 1000, expiresMs: 2000 });
    await kv.set("globex", "a", '"theirs"', { quotaBytes: 10_000, nowMs: 1000 });
    expect(await kv.get("acme", "a", 1500)).toBe('{"x":1}');
    expect(await kv.get("globex", "a", 1500)).toBe('"theirs"');
    expect(await kv.get("acme", "b", 1999)).toBe("2");
    expect(await kv.get("acme", "b", 2000)).toBeUndefined();
    expect(await kv.usedBytes("acme")).toBe(1 + 7 + KV_ENTRY_OVERHEAD_BYTES);

    for (let i = 0; i < 250; i++) await kv.set("acme", `p:${String(i).padStart(3, "0")}`, "0", { quotaBytes: 1e9, nowMs: 3000 });
    const first = await kv.list("acme", { prefix: "p:", limit: 100, nowMs: 3000 });
    expect(first.keys.length).toBe(100);
    expect(first.keys[0]).toBe("p:000");
    const second = await kv.list("acme", { prefix: "p:", limit: 100, nowMs: 3000, after: first.cursor! });
    expect(second.keys[0]).toBe("p:100");
    const third = await kv.list("acme", { prefix: "p:", limit: 100, nowMs: 3000, after: second.cursor! });
    expect(third.keys.length).toBe(50);
    expect(third.cursor).toBeUndefined();
    expect((await kv.list("globex", { prefix: "", limit: 100, nowMs: 3000 })).keys).toEqual(["a"]);

    expect(await kv.delete("acme", "p:000", 3000)).toBe(true);
    expect(await kv.delete("acme", "p:000", 3000)).toBe(false);
    await store.close();
  });

  it("refuses a write past the quota, counting a replaced value once", async () => {
    const store = await open();
    const kv = store.kv;
    const quota = 2 * (1 + 100 + KV_ENTRY_OVERHEAD_BYTES);
    const value = JSON.stringify("v".repeat(98));
    await kv.set("acme", "a", value, { quotaBytes: quota, nowMs: 0 });
    await kv.set("acme", "b", value, { quotaBytes: quota, nowMs: 0 });
    await kv.set("acme", "a", value, { quotaBytes: quota, nowMs: 0 }); // replacing costs nothing more
    await expect(kv.set("acme", "c", value, { quotaBytes: quota, nowMs: 0 })).rejects.toMatchObject({ code: "CAPABILITY_QUOTA" });
    await kv.delete("acme", "a", 0);
    await kv.set("acme", "c", value, { quotaBytes: quota, nowMs: 0 });
    // Expired entries stop counting.
    await kv.set("acme", "t", "1", { quotaBytes: 1e9, nowMs: 0, expiresMs: 10 });
    await kv.delete("acme", "b", 20);
    await kv.set("acme", "d", value, { quotaBytes: quota, nowMs: 20 });
    await store.close();
  });
  it("incr adds atomically (parallel calls lose none), keeps an entry's expiry, restarts an expired one and refuses a non-number", async () => {
    const store = await open();
    const kv = store.kv;
    const quota = { quotaBytes: 10_000, nowMs: 1000 };
    expect(await kv.incr("acme", "n", 5, { ...quota, expiresMs: 5000 })).toBe(5);
    await Promise.all(Array.from({ length: 20 }, () => kv.incr("acme", "n", 1, { ...quota, expiresMs: 9000 })));
    expect(await kv.get("acme", "n", 1000)).toBe("25");
    // The window stays the first write's: at 5000 it is gone, and the next incr starts from 0 with its own expiry.
    expect(await kv.get("acme", "n", 5000)).toBeUndefined();
    expect(await kv.incr("acme", "n", 2, { quotaBytes: 10_000, nowMs: 6000, expiresMs: 7000 })).toBe(2);
    expect(await kv.get("acme", "n", 6999)).toBe("2");
    await kv.set("acme", "s", '"text"', quota);
    await expect(kv.incr("acme", "s", 1, quota)).rejects.toMatchObject({ code: "CAPABILITY_INVALID" });
    expect(await kv.get("acme", "s", 1000)).toBe('"text"');
    expect(await kv.usedBytes("acme")).toBe(1 + 1 + 1 + 6 + 2 * KV_ENTRY_OVERHEAD_BYTES);
    await store.close();
  });

  it("compareAndSet writes only when the value matches (key order aside), and an expected null matches a missing entry", async () => {
    const store = await open();
    const kv = store.kv;
    const quota = { quotaBytes: 10_000, nowMs: 1000 };
    const wins = await Promise.all(Array.from({ length: 10 }, (_, i) => kv.compareAndSet("acme", "lock", null, JSON.stringify(i), quota)));
    expect(wins.filter(Boolean)).toHaveLength(1);
    await kv.set("acme", "o", '{"a":1,"b":2}', quota);
    expect(await kv.compareAndSet("acme", "o", '{"a":1,"b":3}', '"no"', quota)).toBe(false);
    expect(await kv.compareAndSet("acme", "o", '{"b":2,"a":1}', '"yes"', quota)).toBe(true);
    expect(await kv.get("acme", "o", 1000)).toBe('"yes"');
    await kv.set("acme", "gone", "1", { ...quota, expiresMs: 1500 });
    expect(await kv.compareAndSet("acme", "gone", null, "2", { quotaBytes: 10_000, nowMs: 2000 })).toBe(true);
    expect(await kv.get("acme", "gone", 2000)).toBe("2");
    await store.close();
  });
});
