import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jsonLines, runCli, startCli } from "../helpers/cli.js";
import { tmp } from "../helpers/harness.js";
import { openMemoryStore, openStore } from "../../src/store/open.js";
import type { Store } from "../../src/store/types.js";

/*
 * ctx.kv.incr and ctx.kv.compareAndSet: atomic across parallel tool calls of one run (through the real CLI and
 * sandbox), across two processes sharing one store file, and in both stores' KvStore directly.
 */

const counter = `import { defineScript } from "hookbox";
export default defineScript({
  name: "counter",
  hooks: {
    async beforeToolCall(p) {
      const n = await p.kv.incr("calls:shared", 1, { ttlMs: 3600000 });
      const won = await p.kv.compareAndSet("lock:" + p.sessionId, null, p.call.id);
      console.log(JSON.stringify({ n, won }));
      return undefined;
    },
  },
});
`;

const tenCalls = {
  steps: [{ toolCalls: Array.from({ length: 10 }, (_, i) => ({ id: `c${i}`, name: "record", args: { id: `c${i}` } })) }, { text: "done" }],
};

let dir: string;
beforeAll(() => {
  dir = tmp("hookbox-kv-atomic-");
  writeFileSync(join(dir, "counter.ts"), counter);
  writeFileSync(join(dir, "model.json"), JSON.stringify(tenCalls));
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [{ name: "record", description: "r", parameters: { type: "object" }, handler: async (args) => ({ ok: args.id }) }];`,
  );
});

const runArgs = (store?: string) => [
  "run",
  join(dir, "counter.ts"),
  "--model",
  `scripted:${join(dir, "model.json")}`,
  "--host-tools",
  join(dir, "tools.mjs"),
  "--prompt",
  "count",
  "--max-parallel-tools",
  "10",
  "--json",
  ...(store ? ["--store", store] : []),
];

const logged = (stdout: string) =>
  jsonLines(stdout)
    .filter((e) => e.type === "log")
    .map((e) => JSON.parse(e.message) as { n: number; won: boolean });

describe("ctx.kv.incr and compareAndSet through the CLI", () => {
  it("ten parallel tool calls whose hook increments one counter leave it at exactly 10; one compareAndSet from null wins", async () => {
    for (const store of [undefined, join(dir, "one.db")]) {
      const run = await runCli(runArgs(store));
      expect(run.stderr).toBe("");
      const events = jsonLines(run.stdout);
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
      // The ten calls' hooks ran while each other's were in flight (tool-started of all before any tool-finished is not
      // guaranteed; the counter is what matters): every value 1..10 seen exactly once.
      const values = logged(run.stdout);
      expect(values.map((v) => v.n).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(values.filter((v) => v.won)).toHaveLength(1);
      if (store) {
        const opened = openStore(store);
        try {
          expect(await opened.kv.get("default", "calls:shared", Date.now())).toBe("10");
        } finally {
          await opened.close();
        }
      }
    }
  });

  it("two processes on one store file: twenty increments leave exactly 20", async () => {
    const store = join(dir, "two.db");
    // Create the store first so neither process races the other to migrate it.
    expect((await runCli(["sessions", "--store", store])).code).toBe(0);
    const runs = await Promise.all([startCli(runArgs(store)).done, startCli(runArgs(store)).done]);
    for (const run of runs) expect(jsonLines(run.stdout).at(-1), run.stderr).toMatchObject({ type: "run-finished", status: "completed" });
    const seen = runs.flatMap((run) => logged(run.stdout).map((v) => v.n)).sort((a, b) => a - b);
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const opened = openStore(store);
    try {
      expect(await opened.kv.get("default", "calls:shared", Date.now())).toBe("20");
    } finally {
      await opened.close();
    }
  });
});

describe.each([
  ["memory", () => openMemoryStore()],
  ["sqlite", () => openStore(join(tmp("hookbox-kv-store-"), "kv.db"))],
])("KvStore incr and compareAndSet (%s)", (_name, open) => {
  let store: Store;
  beforeAll(() => {
    store = open();
  });
  afterAll(() => store.close());
  const write = (nowMs: number, ttlMs?: number) => ({ quotaBytes: 1 << 20, nowMs, ...(ttlMs ? { expiresMs: nowMs + ttlMs } : {}) });

  it("parallel increments all count; a missing key starts at 0; by may be negative or fractional", async () => {
    const sums = await Promise.all(Array.from({ length: 10 }, () => store.kv.incr("t", "n", 1, write(1000))));
    expect([...sums].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await store.kv.incr("t", "n", -2.5, write(1000))).toBe(7.5);
    expect(await store.kv.get("other-tenant", "n", 1000)).toBeUndefined();
  });

  it("ttl applies when incr creates the key; later increments keep that expiry (a fixed window)", async () => {
    expect(await store.kv.incr("t", "window", 1, write(1000, 100))).toBe(1);
    expect(await store.kv.incr("t", "window", 1, write(1050, 100))).toBe(2);
    expect(await store.kv.incr("t", "window", 1, write(1099, 100_000))).toBe(3);
    expect(await store.kv.get("t", "window", 1100)).toBeUndefined(); // the first write's window ended at 1100
    expect(await store.kv.incr("t", "window", 1, write(1100, 100))).toBe(1);
  });

  it("incr on a value that is not a number is CAPABILITY_INVALID and leaves it", async () => {
    await store.kv.set("t", "name", JSON.stringify("bo"), write(1000));
    await expect(store.kv.incr("t", "name", 1, write(1000))).rejects.toMatchObject({ code: "CAPABILITY_INVALID" });
    expect(await store.kv.get("t", "name", 1000)).toBe('"bo"');
  });

  it("compareAndSet writes only on a match (JSON equality, key order aside); null expects a missing key; one of ten parallel wins", async () => {
    const wins = await Promise.all(
      Array.from({ length: 10 }, (_, i) => store.kv.compareAndSet("t", "lock", null, JSON.stringify(i), write(1000))),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    const holder = await store.kv.get("t", "lock", 1000);
    expect(await store.kv.compareAndSet("t", "lock", "999", '"x"', write(1000))).toBe(false);
    expect(await store.kv.get("t", "lock", 1000)).toBe(holder);
    await store.kv.set("t", "doc", '{"a":1,"b":[1,{"c":2,"d":3}]}', write(1000));
    expect(await store.kv.compareAndSet("t", "doc", '{"b":[1,{"d":3,"c":2}],"a":1}', '{"v":2}', write(1000))).toBe(true);
    expect(await store.kv.compareAndSet("t", "doc", '{"b":[{"d":3,"c":2},1],"a":1}', '{"v":3}', write(1000))).toBe(false);
    expect(await store.kv.get("t", "doc", 1000)).toBe('{"v":2}');
    await store.kv.set("t", "gone", "1", write(1000, 10));
    expect(await store.kv.compareAndSet("t", "gone", null, "2", write(2000))).toBe(true); // expired counts as missing
  });

  it("their writes count against the quota like set's", async () => {
    const tiny = { quotaBytes: 100, nowMs: 1000 };
    await expect(store.kv.compareAndSet("q", "k", null, JSON.stringify("x".repeat(200)), tiny)).rejects.toMatchObject({
      code: "CAPABILITY_QUOTA",
    });
    expect(await store.kv.get("q", "k", 1000)).toBeUndefined();
  });
});
