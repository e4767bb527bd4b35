import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { openStore, thisProcessInstance, type Store } from "../../src/store/index.js";
import { headJson } from "../../src/turns/head-json.js";
import { event, run, session, tempDir, turn } from "./helpers.js";

/*
 * The SQLite store keeps where its own committed writes left each run, session log and tenant, instead of reading
 * them back at each transaction (src/store/committed-positions.ts). Another connection's commit makes that stale:
 * these tests write through a second store on the same file between two writes of the first, and check that the
 * first then acts on the database as it is, not as it left it.
 */

let stores: Store[] = [];
afterEach(async () => {
  for (const store of stores) await store.close();
  stores = [];
});

/** Two stores (two connections) on one new file. */
function twoStores(): [Store, Store] {
  const file = join(tempDir(), "store.db");
  const first = openStore(file);
  const second = openStore(file);
  stores = [first, second];
  return [first, second];
}

const eventWrite = (runId: string, seq: number, body: Parameters<typeof event>[2]) => {
  const value = event(runId, seq, body);
  return { event: value, json: JSON.stringify(value) };
};

describe("sqlite store: what it knows of its own writes, against another connection's", () => {
  it("refuses the first owner's writes after another connection resumed the run, though it wrote the run last", async () => {
    const [owner, other] = twoStores();
    await owner.createSession(session());
    await owner.createRun(run("r1"));
    await owner.write({ runId: "r1", events: [eventWrite("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" })], epoch: 1 });
    // The owner's own write taught it the run's epoch; the other connection now moves the run on.
    await other.markInterrupted("r1", "draining", { epoch: 1 });
    await other.reopenRun("r1", { ownerPid: process.pid, ownerInstance: thisProcessInstance(), iterations: 0 });
    expect(await other.getRun("r1")).toMatchObject({ epoch: 2, lastSeq: 3 });

    const block = { id: "b1", kind: "tool_use" as const, payload: { id: "c1", result: 1 }, metadata: {} };
    await expect(
      owner.write({ runId: "r1", toolResults: [{ callId: "c1", blockJson: JSON.stringify(block) }], epoch: 1 }),
    ).rejects.toMatchObject({
      code: "LEASE_LOST",
    });
    // So is a snapshot that follows the seq the owner last wrote.
    const text = JSON.stringify(turn("t1", ["hello"]).blocks[0]);
    const snapshot = {
      phase: "pre_inference" as const,
      index: 1,
      pieces: [{ append: [text] }],
      blockBytes: text.length,
      lastSeq: 1,
      iterations: 0,
      createdMs: 1,
    };
    await expect(owner.write({ runId: "r1", snapshot, epoch: 1 })).rejects.toMatchObject({ code: "LEASE_LOST" });
    expect((await owner.listToolResults("r1")).size).toBe(0);
    expect(await owner.latestSnapshotInfo("r1")).toBeUndefined();
  });

  it("appends a session's blocks after those another connection appended since this one's last snapshot", async () => {
    const [first, second] = twoStores();
    await first.createSession(session());
    await first.createRun(run("r1"));
    await first.saveSnapshot("r1", "pre_inference", turn("t1", ["one", "two"]));
    // The other connection appends to the same session's log (a run of the session in another process).
    await second.createRun(run("r2"));
    await second.saveSnapshot("r2", "pre_inference", turn("t2", ["three"]));

    const grown = turn("t1", ["one", "two"]);
    const previous = (await first.latestSnapshot("r1"))!.turn;
    await first.saveSnapshot("r1", "post_inference", {
      ...grown,
      blocks: [...previous.blocks, { ...grown.blocks[0], id: "t1-b9", payload: { text: "four" } }],
    });

    const texts = (record: Awaited<ReturnType<Store["latestSnapshot"]>>) => record!.turn.blocks.map((block) => block.payload.text);
    expect(texts(await first.latestSnapshot("r1"))).toEqual(["one", "two", "four"]);
    expect(texts(await second.latestSnapshot("r2"))).toEqual(["three"]);
    expect(texts(await second.latestSnapshot("r1"))).toEqual(["one", "two", "four"]);
  });

  it("charges a tenant's quota with the bytes another connection stored since this one's last write", async () => {
    const [first, second] = twoStores();
    await first.createSession(session());
    await first.createRun(run("r1"));
    await first.appendEvent("r1", event("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" }), { maxTenantBytes: 1_000_000 });
    const storedByFirst = (await first.tenantUsage("acme")).storedBytes;

    // The other connection stores 10 KB for the same tenant.
    await second.createSession(session("s2"));
    await second.createRun(run("r2", "s2"));
    await second.appendEvent("r2", event("r2", 1, { type: "run-started", prompt: "x".repeat(10_000), runId: "r2" }));
    const stored = (await second.tenantUsage("acme")).storedBytes;
    expect(stored).toBeGreaterThan(storedByFirst + 10_000);

    // A quota the first connection's own bytes leave room under, but not with the other's added.
    const quota = storedByFirst + 5_000;
    await expect(
      first.appendEvent("r1", event("r1", 2, { type: "inference-started", iteration: 1 }), { maxTenantBytes: quota }),
    ).rejects.toMatchObject({ code: "STORE_QUOTA" });
    expect((await first.tenantUsage("acme")).storedBytes).toBe(stored);
  });
});

describe("sqlite store: a run's writes gathered in one transaction", () => {
  /** A store on a new file with session s1 and its running run r1. */
  async function storeWithRun(): Promise<Store> {
    const store = openStore(join(tempDir(), "store.db"));
    stores = [store];
    await store.createSession(session());
    await store.createRun(run("r1"));
    return store;
  }

  const usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.5 };

  it("leaves the run's row as one write at a time would: seq, inferences, tokens, then the final status and iterations", async () => {
    const store = await storeWithRun();
    // Not awaited one by one: the group commit puts them in one transaction.
    await Promise.all([
      store.write({ runId: "r1", events: [eventWrite("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" })], epoch: 1 }),
      store.write({
        runId: "r1",
        events: [eventWrite("r1", 2, { type: "inference-finished", iteration: 1, toolCalls: [], usage })],
        epoch: 1,
      }),
      store.write({ runId: "r1", events: [eventWrite("r1", 3, { type: "inference-finished", iteration: 2, toolCalls: [], usage })] }),
      store.write({ runId: "r1", events: [eventWrite("r1", 4, { type: "run-finished", status: "completed", iterations: 7 })], epoch: 1 }),
    ]);
    expect(await store.getRun("r1")).toMatchObject({ status: "completed", lastSeq: 4, iterations: 7 });
    expect(await store.runUsage("r1")).toEqual({ inputTokens: 200, outputTokens: 40, costUsd: 1 });
    expect((await store.usageTotals("acme", 0)).inferences).toBe(2);
  });

  it("refuses, alone, a write of the same transaction whose events do not follow, and keeps the others", async () => {
    const store = await storeWithRun();
    const settled = await Promise.allSettled([
      store.write({ runId: "r1", events: [eventWrite("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" })] }),
      store.write({ runId: "r1", events: [eventWrite("r1", 3, { type: "inference-started", iteration: 1 })] }),
      store.write({ runId: "r1", events: [eventWrite("r1", 2, { type: "inference-finished", iteration: 1, toolCalls: [], usage })] }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(settled[1]).toMatchObject({ reason: { code: "STORE", message: expect.stringContaining("does not follow committed seq 1") } });
    expect(await store.getRun("r1")).toMatchObject({ lastSeq: 2, iterations: 1 });
    expect(await store.runUsage("r1")).toEqual(usage);
  });

  it("deletes a session whose run ended earlier in the same transaction, and refuses the run's later write", async () => {
    const store = await storeWithRun();
    await store.write({ runId: "r1", events: [eventWrite("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" })] });
    const settled = await Promise.allSettled([
      store.write({ runId: "r1", events: [eventWrite("r1", 2, { type: "run-finished", status: "completed", iterations: 0 })] }),
      store.deleteSession("s1"),
      store.write({ runId: "r1", events: [eventWrite("r1", 3, { type: "inference-started", iteration: 2 })] }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect(settled[2]).toMatchObject({ reason: { code: "STORE", message: expect.stringContaining("unknown run r1") } });
    expect(await store.getRun("r1")).toBeUndefined();
  });

  it("refuses a hook record of a run whose session was deleted earlier in the same transaction", async () => {
    const store = await storeWithRun();
    await store.write({ runId: "r1", events: [eventWrite("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" })] });
    const hookCall = { callId: "c1", hook: "beforeToolCall", attempt: 1, shadow: false, verdict: "allow", decisionJson: "{}" };
    const settled = await Promise.allSettled([
      store.write({ runId: "r1", events: [eventWrite("r1", 2, { type: "run-finished", status: "completed", iterations: 0 })] }),
      store.deleteSession("s1"),
      // As the session layer writes: owner known, so only the run's own position is looked up.
      store.write({ runId: "r1", sessionId: "s1", tenant: "acme", hookCalls: [hookCall] }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect(settled[2]).toMatchObject({ reason: { code: "STORE", message: expect.stringContaining("unknown run r1") } });
  });

  it("takes a snapshot at the seq the kept writes left, after a write of the same transaction was refused alone", async () => {
    const store = await storeWithRun();
    const text = JSON.stringify(turn("t1", ["hello"]).blocks[0]);
    const snapshot = {
      phase: "pre_inference" as const,
      index: 1,
      pieces: [{ append: [text] }],
      headJson: headJson(turn("t1", ["hello"])),
      blockBytes: text.length,
      lastSeq: 1,
      iterations: 0,
      createdMs: 1,
    };
    const settled = await Promise.allSettled([
      store.write({ runId: "r1", events: [eventWrite("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" })] }),
      // Its events are applied, then its bytes are refused: rolled back alone, seq 2 is not the run's.
      store.write({ runId: "r1", events: [eventWrite("r1", 2, { type: "inference-started", iteration: 1 })], maxTenantBytes: 1 }),
      store.write({ runId: "r1", snapshot }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(settled[1]).toMatchObject({ reason: { code: "STORE_QUOTA" } });
    expect(await store.getRun("r1")).toMatchObject({ lastSeq: 1 });
    expect(await store.latestSnapshotInfo("r1")).toMatchObject({ index: 1, lastSeq: 1 });
  });
});
