import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { openMemoryStore, openStore, type Store } from "../../src/store/index.js";
import { StoredRunPersistence } from "../../src/session/persistence.js";
import { RunFeed } from "../../src/session/run-feed.js";
import type { ChainVerdict } from "../../src/host/types.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { event, run, session, tempDir, turn } from "../store/helpers.js";

/*
 * The run writer gathers what the loop hands over in one stretch into one store write, except what must not share
 * a write's fate: a shadow chain record (lost alone when refused) and the final event (replaced when refused).
 */
describe.each([
  ["sqlite", () => openStore(join(tempDir(), "store.db"))],
  ["memory", () => openMemoryStore()],
] as [string, () => Store][])("StoredRunPersistence over the %s store", (_name, open) => {
  let store: Store;
  afterEach(async () => store?.close());

  /** A run r1 and its writer, whose tenant may store `room` more bytes than the session and run take. */
  async function writer(room: number) {
    store = open();
    await store.createSession(session("s1", "acme"));
    await store.createRun(run("r1", "s1"));
    const feed = new RunFeed();
    const persistence = new StoredRunPersistence({
      store,
      runId: "r1",
      sessionId: "s1",
      tenant: "acme",
      feed,
      maxTenantBytes: (await store.tenantUsage("acme")).storedBytes + room,
      from: { snapshotIndex: 0, lastSeq: 0, iterations: 0, epoch: 1 },
    });
    return { persistence, feed };
  }

  const verdict = (shadow: boolean, note: string) =>
    ({
      hook: "beforeToolCall",
      callId: "c1",
      attempt: 1,
      verdict: "proceed",
      decision: { action: "none", note },
      payload: {},
      shadow,
    }) as unknown as ChainVerdict;

  it("a shadow chain record refused over the quota is lost alone: the events and snapshot around it are kept", async () => {
    const { persistence } = await writer(20_000);
    persistence.onEvent(event("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" }));
    persistence.onHookCall(verdict(true, "x".repeat(50_000)));
    persistence.onEvent(event("r1", 2, { type: "inference-started", iteration: 1 }));
    persistence.onHookCall(verdict(false, "kept"));
    await persistence.onSnapshot("post_inference", turn("t1", ["hello"]));
    await persistence.settled();
    expect((await store.listEvents("r1")).map((e) => e.seq)).toEqual([1, 2]);
    expect((await store.listSnapshotInfos("r1")).map((info) => info.phase)).toEqual(["post_inference"]);
    expect((await store.listHookCalls("r1")).map((call) => call.shadow)).toEqual([false]);
  });

  it("a final event refused over the quota is replaced by a small failed one; the events before it are kept", async () => {
    const { persistence, feed } = await writer(5_000);
    const ended = new Promise<HookboxEvent>((resolve) =>
      feed.subscribe((published) => published.type === "run-finished" && resolve(published.event)),
    );
    persistence.onEvent(event("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" }));
    persistence.onEvent(event("r1", 2, { type: "run-finished", status: "completed", iterations: 0, text: "y".repeat(10_000) }));
    expect(await ended).toMatchObject({ seq: 2, status: "failed", errorCode: "STORE_QUOTA" });
    const stored = await store.listEvents("r1");
    expect(stored.map((e) => e.seq)).toEqual([1, 2]);
    expect(stored[1]).toMatchObject({ type: "run-finished", status: "failed", errorCode: "STORE_QUOTA" });
  });

  it("publishes each event once committed, in order, with the text it was handed: the object is not serialized again", async () => {
    const { persistence, feed } = await writer(20_000);
    const published: { seq: number; json: string }[] = [];
    feed.subscribe(({ seq, json }) => published.push({ seq, json }));
    const events = [1, 2, 3].map((seq) => event("r1", seq, { type: "inference-started", iteration: seq }));
    const texts = events.map((one) => JSON.stringify(one));
    // Changed after its text was made: what is stored and published is still the text.
    for (const one of events) (one as { iteration?: number }).iteration = 99;
    for (const [index, one] of events.entries()) persistence.onEvent(one, texts[index]);
    expect(published).toEqual([]); // not yet committed
    await persistence.settled();
    expect(published).toEqual(texts.map((json, index) => ({ seq: index + 1, json })));
    expect((await store.listEventTexts("r1", 0)).map((row) => row.json)).toEqual(texts);
  });

  it.each([
    [
      "an event",
      (persistence: StoredRunPersistence) =>
        persistence.onEvent(event("r1", 1, { type: "log", script: "s", level: "info", message: "x".repeat(50_000) })),
    ],
    ["an active chain record", (persistence: StoredRunPersistence) => persistence.onHookCall(verdict(false, "x".repeat(50_000)))],
  ])("%s refused over the quota, in a write of its own, fails the run's next snapshot", async (_what, hand) => {
    const { persistence } = await writer(20_000);
    hand(persistence);
    await new Promise((resolve) => setImmediate(resolve)); // its write goes alone at the end of the turn
    await persistence.settled();
    await expect(persistence.onSnapshot("post_inference", turn("t1", ["hello"]))).rejects.toMatchObject({ code: "STORE_QUOTA" });
  });
});
