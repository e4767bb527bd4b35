import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { openMemoryStore, openStore, type Store } from "../../src/store/index.js";
import { SessionManager } from "../../src/session/manager.js";
import type { HookboxEvent } from "../../src/events/types.js";
import type { HostModule } from "../../src/host/host-module.js";
import { harness } from "../helpers/harness.js";
import { tempDir } from "../store/helpers.js";

/*
 * The log store through the real loop (in-process tenant runtime, host tools, scripted model): a session's
 * history is written once, snapshots are positions in it, and a run's cost does not grow with the session.
 */

const steps = [
  { text: "Looking it up.", toolCalls: [{ id: "c1", name: "lookup", args: { id: "A17" } }] },
  { text: "Order A17 totals 120." },
];
const host: Partial<HostModule> = {
  tools: [
    {
      name: "lookup",
      description: "look up an order",
      parameters: { type: "object", properties: { id: { type: "string" } } },
      handler: (args) => ({ id: args.id, total: 120, note: "n".repeat(400) }),
    },
  ],
};

let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

async function session(options: { store?: Store; hostModule?: Partial<HostModule> } = {}) {
  const dir = tempDir("hookbox-log-");
  const file = join(dir, "store.db");
  store = options.store ?? openStore(file);
  const { runtime } = await harness({ steps, host: options.hostModule ?? host, tenant: "acme" });
  const manager = new SessionManager({ store, runtimeFor: async () => runtime });
  const created = await manager.create({
    tenant: "acme",
    tenantConfig: { name: "acme", scripts: [], model: { kind: "scripted", file: "m" } },
  });
  const run = async (prompt: string) => (await created.run(prompt)).wait();
  return { manager, session: created, run, file, runtime };
}

describe("a session's history in the store", () => {
  it("grows by what each run adds: run 40 of a session writes as many bytes as run 5", async () => {
    const { run, file, session: s } = await session();
    const added: number[] = [];
    for (let i = 1; i <= 40; i++) {
      const before = (await store!.tenantUsage("acme")).storedBytes;
      expect((await run(`question ${String(i).padStart(2, "0")}`)).status).toBe("completed");
      added.push((await store!.tenantUsage("acme")).storedBytes - before);
    }
    // Ids, seqs and times have the same lengths in every run; only the history differs, and it is not written again.
    expect(Math.abs(added[39] - added[4])).toBeLessThan(added[4] * 0.02);
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const log = db.prepare("SELECT count(*) AS n, sum(length(block)) AS bytes FROM session_log WHERE session_id = ?").get(s.id) as {
        n: number;
        bytes: number;
      };
      // Each run adds five blocks: its user message, two answers, the call and its result.
      expect(log.n).toBe(40 * 5);
      // Snapshots hold positions, not blocks: the latest one is as small as the first.
      const sizes = db.prepare("SELECT length(blocks) AS n FROM snapshots").all() as { n: number }[];
      expect(Math.max(...sizes.map((row) => row.n))).toBeLessThan(40);
    } finally {
      db.close();
    }
    const history = (await s.history())!;
    expect(history.blocks.filter((b) => b.kind === "user")).toHaveLength(40);
    expect(history.blocks.at(-1)?.payload.text).toBe("Order A17 totals 120.");
  });

  it("starts a run from the turn this process committed, and from the store when another process went on since", async () => {
    const first = await session();
    await first.run("one");
    let reads = 0;
    const readTurn = store!.readTurn.bind(store);
    store!.readTurn = (stored) => {
      reads += 1;
      return readTurn(stored);
    };
    // A session's first run leaves no turn behind (docs/server.md, "History"): its second run reads it, once.
    await first.run("two");
    expect(reads).toBe(1);
    await first.run("three");
    await first.run("four");
    expect(reads).toBe(1);
    // Another manager (another process sharing the store) runs the session: the first one's turn is stale now.
    const { runtime } = await harness({ steps, host, tenant: "acme" });
    const other = new SessionManager({ store: store!, runtimeFor: async () => runtime });
    await (await (await other.get(first.session.id))!.run("five")).wait();
    const result = await first.run("six");
    expect(reads).toBe(3); // the other manager's start, and this one's after it
    expect(result.turn.blocks.filter((b) => b.kind === "user").map((b) => b.payload.text)).toEqual([
      "one",
      "two",
      "three",
      "four",
      "five",
      "six",
    ]);
  });

  it("turns every event into JSON once: the store, three live readers and the budget share the text", async () => {
    const { manager, session: s } = await session({ store: openMemoryStore() });
    const stringify = JSON.stringify;
    const encoded = new Map<number, number>();
    JSON.stringify = ((value: unknown, ...rest: unknown[]) => {
      const event = value as Partial<HookboxEvent> | null;
      if (
        event &&
        typeof event === "object" &&
        typeof event.seq === "number" &&
        typeof event.timestampMs === "number" &&
        "inferenceId" in event
      )
        encoded.set(event.seq, (encoded.get(event.seq) ?? 0) + 1);
      return (stringify as (...args: unknown[]) => string)(value, ...rest);
    }) as typeof JSON.stringify;
    try {
      const handle = await s.run("question");
      const readers = [1, 2, 3].map(async () => {
        const texts: string[] = [];
        for await (const item of manager.eventTexts(handle.runId)) texts.push(item.json);
        return texts;
      });
      await handle.wait();
      const [a, b, c] = await Promise.all(readers);
      expect(b).toEqual(a);
      expect(c).toEqual(a);
      expect(a.length).toBeGreaterThan(5);
    } finally {
      JSON.stringify = stringify;
    }
    expect([...encoded.values()].every((count) => count === 1)).toBe(true);
    expect(encoded.size).toBeGreaterThan(5);
  });

  it("a middleware that changes a block in place fails its run naming it: blocks are immutable once in a turn", async () => {
    const { run } = await session({
      hostModule: {
        ...host,
        middleware: [
          {
            name: "redact-in-place",
            run: (turn, next) => {
              turn.blocks[0].payload.text = "redacted";
              return next(turn);
            },
          },
        ],
      },
    });
    const result = await run("my card is 4111");
    expect(result).toMatchObject({ status: "failed" });
    expect(result.reason).toMatch(/redact-in-place/);
    expect(result.reason).toMatch(/read.only|frozen|not extensible/i);
  });
});
