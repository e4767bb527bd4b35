import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { startOpenAIServer } from "../helpers/openai-server.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { HostMiddleware } from "../../src/loop/middleware-chain.js";
import type { LiveEvent } from "../../src/events/types.js";
import type { RunHandle, TenantConfig } from "../../src/host/types.js";
import { SessionManager } from "../../src/session/manager.js";
import { openMemoryStore, openStore, type Store } from "../../src/store/index.js";
import { event, run, session, tempDir } from "../store/helpers.js";
import { RunFeed } from "../../src/session/run-feed.js";
import { eventWithText } from "../../src/events/event-json.js";
import { readRunEvents } from "../../src/session/read-events.js";

const noPool: SandboxPool = {
  tenant() {
    throw new Error("unused");
  },
  async close() {},
};

const ANSWER = "Hello, world: the refund is on its way.";

/** A model on loopback that streams ANSWER in 5-character pieces and holds after the second until released. */
async function heldModel() {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  const server = await startOpenAIServer([{ text: ANSWER, hold: { afterPieces: 2, until } }]);
  process.env.HOOKBOX_TEST_KEY = "sk-test";
  const config: TenantConfig = {
    name: "acme",
    scripts: [],
    model: { kind: "openai-compatible", model: "gpt-test", baseUrl: server.url, apiKeyEnv: "HOOKBOX_TEST_KEY" },
    stream: true,
  };
  return { server, release, config };
}

/** Reads a run's live events, calling `onEvent` with all seen so far after each one. */
async function follow(events: AsyncIterable<LiveEvent>, onEvent?: (seen: LiveEvent[]) => void): Promise<LiveEvent[]> {
  const seen: LiveEvent[] = [];
  for await (const event of events) {
    seen.push(event);
    onEvent?.(seen);
  }
  return seen;
}

/** The text deltas a live reader saw, then the stored events, checked the same way for both library paths. */
async function expectLiveText(handle: RunHandle, release: () => void) {
  let releasedAfter: LiveEvent[] | undefined;
  const live = await follow(handle.events(1, { textDeltas: true }), (seen) => {
    const deltas = seen.filter((e) => e.type === "text-delta");
    if (!releasedAfter && deltas.length === 2) {
      releasedAfter = [...seen];
      release();
    }
  });
  // The first pieces arrived while the model was still answering: nothing had finished yet.
  expect(releasedAfter?.some((e) => e.type === "inference-finished")).toBe(false);
  const deltas = live.filter((e) => e.type === "text-delta");
  expect(deltas.map((e) => e.delta).join("")).toBe(ANSWER);
  for (const delta of deltas) {
    expect(delta).toMatchObject({ iteration: 1, sessionId: handle.sessionId, inferenceId: handle.inferenceId });
    expect(delta).not.toHaveProperty("seq");
  }
  const types = live.map((e) => e.type);
  expect(types.indexOf("inference-started")).toBeLessThan(types.indexOf("text-delta"));
  expect(types.lastIndexOf("text-delta")).toBeLessThan(types.indexOf("inference-finished"));
  const finished = live.find((e) => e.type === "inference-finished");
  expect(finished).toMatchObject({ text: ANSWER });
  // Stored events keep their gap-free seq: deltas are not counted.
  const stored = live.filter((e) => e.type !== "text-delta");
  expect(stored.map((e) => (e as { seq: number }).seq)).toEqual(stored.map((_, i) => i + 1));
  // A reader that joins after the answer sees the finished text and no delta.
  const late = await follow(handle.events(1, { textDeltas: true }));
  expect(late.some((e) => e.type === "text-delta")).toBe(false);
  expect(late.find((e) => e.type === "inference-finished")).toMatchObject({ text: ANSWER });
}

describe("live text: text-delta events while a streaming model answers", () => {
  let close: (() => Promise<void>) | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await close?.();
    await store?.close();
    store = undefined;
  });

  it("reach a run handle's reader that asks for them, between inference-started and inference-finished; middleware sees the whole answer", async () => {
    const { server, release, config } = await heldModel();
    close = server.close;
    const seenByMiddleware: string[] = [];
    const middleware: HostMiddleware = {
      name: "watch",
      async run(turn, next) {
        const answered = await next(turn);
        const last = answered.blocks.at(-1);
        seenByMiddleware.push(last?.kind === "llm_text" ? String(last.payload.text) : "");
        return answered;
      },
    };
    const runtime = await createTenantRuntime(config, noPool, { host: { middleware: [middleware] } });
    const handle = runtime.start({ sessionId: "s", prompt: "Where is my refund?" });
    // A reader that did not ask for deltas never sees one.
    const plain = follow(handle.events());
    await expectLiveText(handle, release);
    expect((await plain).some((e) => e.type === "text-delta")).toBe(false);
    expect(seenByMiddleware).toEqual([ANSWER]);
    expect((await handle.wait()).text).toBe(ANSWER);
  });

  it("reach a stored run's reader after the events before them are committed, and are never stored", async () => {
    const { server, release, config } = await heldModel();
    close = server.close;
    const dir = tempDir("hookbox-live-text-");
    store = openStore(join(dir, "store.db"));
    const runtime = await createTenantRuntime(config, noPool);
    const manager = new SessionManager({ store, runtimeFor: async () => runtime });
    const session = await manager.create({ tenant: "acme", tenantConfig: config });
    const handle = await session.run("Where is my refund?");
    await expectLiveText(handle, release);
    const events = await store.listEvents(handle.runId);
    expect(events.some((e) => (e.type as string) === "text-delta")).toBe(false);
    expect(events.find((e) => e.type === "inference-finished")).toMatchObject({ text: ANSWER });
  });
});

/**
 * A second reader joins once the first has seen two pieces: it starts from the answer so far, then reads on.
 * A stored run's reader may still be reading the store when the rest streams by; once it reads the finished
 * inference from there it skips the deltas before it (it has the whole text), so its deltas are a prefix.
 */
async function expectJoinMidAnswer(handle: RunHandle, release: () => void, deltas: "every" | "a prefix") {
  let joined: Promise<LiveEvent[]> | undefined;
  await follow(handle.events(1, { textDeltas: true }), (seen) => {
    if (joined || seen.filter((e) => e.type === "text-delta").length < 2) return;
    joined = follow(handle.events(1, { textDeltas: true }), (late) => {
      if (late.some((e) => e.type === "text-delta")) release();
    });
  });
  const late = (await joined!).filter((e) => e.type === "text-delta");
  expect(late[0]).toMatchObject({ sofar: true, delta: ANSWER.slice(0, 10), iteration: 1 });
  expect(late.slice(1).every((e) => !("sofar" in e))).toBe(true);
  const text = late.map((e) => e.delta).join("");
  if (deltas === "every") expect(text).toBe(ANSWER);
  else expect(ANSWER.startsWith(text)).toBe(true);
  expect((await joined!).find((e) => e.type === "inference-finished")).toMatchObject({ text: ANSWER });
}

describe("live text: a reader that joins mid-answer", () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  it("gets the answer so far in one sofar delta, then the rest piece by piece (a run handle)", async () => {
    const { server, release, config } = await heldModel();
    close = server.close;
    const runtime = await createTenantRuntime(config, noPool);
    const handle = runtime.start({ sessionId: "s", prompt: "Where is my refund?" });
    await expectJoinMidAnswer(handle, release, "every");
  });

  it("gets the answer so far in one sofar delta, then the rest piece by piece (a stored run)", async () => {
    const { server, release, config } = await heldModel();
    close = server.close;
    const store = openStore(join(tempDir("hookbox-live-join-"), "store.db"));
    try {
      const runtime = await createTenantRuntime(config, noPool);
      const manager = new SessionManager({ store, runtimeFor: async () => runtime });
      const session = await manager.create({ tenant: "acme", tenantConfig: config });
      await expectJoinMidAnswer(await session.run("Where is my refund?"), release, "a prefix");
    } finally {
      await store.close();
    }
  });

  it("gets nothing extra once the inference has finished (the feed forgot the answer)", async () => {
    const feed = new RunFeed(1);
    const delta = { type: "text-delta" as const, iteration: 1, delta: "Hel", timestampMs: 1, sessionId: "s1", inferenceId: "i" };
    feed.publishDelta(delta);
    const heard: string[] = [];
    feed.subscribeDeltas((d, afterSeq) => heard.push(`${d.delta}@${afterSeq}${d.sofar ? " sofar" : ""}`))();
    feed.publish(eventWithText(event("r1", 2, { type: "inference-finished", iteration: 1, text: "Hello", toolCalls: [] })));
    feed.subscribeDeltas((d) => heard.push(d.delta))();
    feed.publishDelta({ ...delta, iteration: 2, delta: "Next" });
    feed.publishDelta({ ...delta, iteration: 2, delta: " one" });
    feed.subscribeDeltas((d) => heard.push(`${d.delta}${d.sofar ? " sofar" : ""}`))();
    expect(heard).toEqual(["Hel@1 sofar", "Next one sofar"]);
  });
});

describe("a stored run's live reader and text deltas", () => {
  it("drops a delta that reaches it after it has passed the delta's place (the inference's end was read from the store)", async () => {
    const store = openMemoryStore();
    await store.createSession(session("s1"));
    await store.createRun(run("r1", "s1"));
    await store.appendEvent("r1", event("r1", 1, { type: "run-started", prompt: "p", runId: "r1" }));
    await store.appendEvent("r1", event("r1", 2, { type: "inference-started", iteration: 1 }));
    // The inference's end is committed before the delta that came before it is published (one group commit).
    const finished = event("r1", 3, { type: "inference-finished", iteration: 1, text: "Hello", toolCalls: [] });
    await store.appendEvent("r1", finished);
    const feed = new RunFeed(2);
    const reader = readRunEvents({ store, runId: "r1", afterSeq: 0, feed: () => feed, textDeltas: true });
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) seen.push((await reader.next()).value!.type);
    feed.publishDelta({ type: "text-delta", iteration: 1, delta: "Hel", timestampMs: 1, sessionId: "s1", inferenceId: "i" });
    feed.publish(eventWithText(finished));
    const ending = event("r1", 4, { type: "run-finished", status: "completed", iterations: 1 });
    await store.appendEvent("r1", ending);
    feed.publish(eventWithText(ending));
    for await (const item of { [Symbol.asyncIterator]: () => reader }) seen.push(item.type);
    expect(seen).toEqual(["run-started", "inference-started", "inference-finished", "run-finished"]);
  });

  it("hands a delta over right after the event it followed", async () => {
    const store = openMemoryStore();
    await store.createSession(session("s1"));
    await store.createRun(run("r1", "s1"));
    await store.appendEvent("r1", event("r1", 1, { type: "run-started", prompt: "p", runId: "r1" }));
    const feed = new RunFeed(1);
    const reader = readRunEvents({ store, runId: "r1", afterSeq: 0, feed: () => feed, textDeltas: true });
    expect((await reader.next()).value).toMatchObject({ type: "run-started" });
    const started = event("r1", 2, { type: "inference-started", iteration: 1 });
    await store.appendEvent("r1", started);
    feed.publish(eventWithText(started));
    feed.publishDelta({ type: "text-delta", iteration: 1, delta: "Hel", timestampMs: 1, sessionId: "s1", inferenceId: "i" });
    const ending = event("r1", 3, { type: "run-finished", status: "completed", iterations: 1 });
    await store.appendEvent("r1", ending);
    feed.publish(eventWithText(ending));
    const seen: string[] = [];
    for await (const item of { [Symbol.asyncIterator]: () => reader }) seen.push(item.type);
    expect(seen).toEqual(["inference-started", "text-delta", "run-finished"]);
  });
});
