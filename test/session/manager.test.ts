import { afterEach, describe, expect, it, vi } from "vitest";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { openStore, type Store } from "../../src/store/index.js";
import { SessionManager } from "../../src/session/manager.js";
import { RECENT_EVENTS } from "../../src/session/run-feed.js";
import type { HookboxEvent } from "../../src/events/types.js";
import type { TenantConfig, TenantRuntime } from "../../src/host/types.js";
import { tempDir } from "../store/helpers.js";
import { FakeRuntime, type FakeStep } from "./fake-runtime.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { StartRunRequest } from "../../src/host/types.js";
import type { SessionRecord } from "../../src/store/types.js";

const twoTools: FakeStep[] = [
  {
    toolCalls: [
      { id: "c1", name: "a" },
      { id: "c2", name: "b" },
    ],
    usage: { inputTokens: 300, outputTokens: 40, costUsd: 0.25 },
  },
  { text: "done" },
];

function tenantConfig(dir: string): TenantConfig {
  const script = join(dir, "policy.ts");
  writeFileSync(script, "export default {};\n");
  return { name: "acme", scripts: [{ path: script }], model: { kind: "scripted", file: join(dir, "model.json") } };
}

async function collect(iterable: AsyncIterable<HookboxEvent>): Promise<HookboxEvent[]> {
  const out: HookboxEvent[] = [];
  for await (const event of iterable) out.push(event);
  return out;
}

describe("SessionManager", () => {
  let store: Store;
  let dir: string;
  afterEach(async () => store?.close());

  function setup(steps: FakeStep[] = twoTools) {
    dir = tempDir("hookbox-session-");
    store = openStore(join(dir, "store.db"));
    const runtime = new FakeRuntime("acme", steps);
    const manager = new SessionManager({ store, runtimeFor: async () => runtime });
    return { manager, runtime };
  }

  /**
   * Two managers on one SQLite file, as this process and another sharing its store (another server, or the CLI's
   * `hookbox sessions --delete`): `other` sees only what the store has committed. The caller closes `elsewhere`.
   */
  function sharedStore(steps: FakeStep[] = []) {
    dir = tempDir("hookbox-session-");
    const file = join(dir, "store.db");
    store = openStore(file);
    const elsewhere = openStore(file);
    const runtime = new FakeRuntime("acme", steps);
    const manager = new SessionManager({ store, runtimeFor: async () => runtime });
    const other = new SessionManager({ store: elsewhere, runtimeFor: async () => runtime });
    return { elsewhere, runtime, manager, other };
  }

  it("runs, commits every event gap-free and every snapshot, and the next run continues the history", async () => {
    const { manager, runtime } = setup([{ toolCalls: [{ id: "c1", name: "a" }] }, { text: "one" }, { text: "two" }]);
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const handle = await session.run("first");
    expect((await handle.wait()).status).toBe("completed");
    const events = await store.listEvents(handle.runId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
    expect((await store.listSnapshots(handle.runId)).map((s) => s.phase)).toEqual([
      "pre_inference",
      "post_inference",
      "post_tools",
      "post_inference",
      "final",
    ]);
    expect((await store.getRun(handle.runId))?.inferenceId).toBe(`inf-${handle.runId}`);
    const second = await session.run("second");
    await second.wait();
    const history = runtime.requests[1].history!;
    expect(history.blocks.map((b) => b.payload.text ?? b.payload.id)).toEqual(["first", "c1", "c1", "one"]);
    const view = await manager.describe(session.id);
    // Only the latest run carries its turn (it continues the earlier ones): the view stays bounded.
    expect(view).toMatchObject({
      status: "idle",
      runs: { total: 2, offset: 0, limit: 20 },
      turns: [{ status: "completed" }, { status: "completed", phase: "final" }],
    });
    expect(view?.turns[0].turn).toBeUndefined();
    expect(view?.turns[1].turn?.blocks.length).toBeGreaterThan(history.blocks.length);
    expect(await manager.describe(session.id, { offset: 1, limit: 5 })).toMatchObject({
      runs: { total: 2, offset: 1, limit: 5 },
      turns: [{ phase: "final" }],
    });
  });

  it("a run started the moment the session's previous run emits its final event continues that run's final turn", async () => {
    dir = tempDir("hookbox-session-");
    store = openStore(join(dir, "store.db"));
    const runtime = new FakeRuntime("acme", [{ text: "one" }, { text: "two" }]);
    let record: SessionRecord | undefined;
    let startSecond!: (started: ReturnType<SessionManager["startRunOf"]>) => void;
    const second = new Promise<ReturnType<SessionManager["startRunOf"]>>((resolve) => (startSecond = resolve));
    const manager: SessionManager = new SessionManager({
      store,
      runtimeFor: async () => runtime,
      // The first moment the session is free again: its final event is committed, other writes may be queued.
      onEvent: (_tenant, _runId, event) => {
        if (event.type === "run-finished" && runtime.requests.length === 1) startSecond(manager.startRunOf(record!, "second"));
      },
    });
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    record = session.record;
    await (await session.run("first")).wait();
    await (await second).wait();
    expect(runtime.requests[1].history!.blocks.map((b) => b.payload.text)).toEqual(["first", "one"]);
  });

  it("a run whose promise rejects (a host bug) is committed failed with HOST_FAULT, the stack kept out of it", async () => {
    dir = tempDir("hookbox-session-");
    store = openStore(join(dir, "store.db"));
    const buggy: TenantRuntime = {
      name: "acme",
      start: (request) => ({
        runId: request.runId!,
        sessionId: request.sessionId,
        inferenceId: "inf-bug",
        events: async function* () {},
        wait: () => Promise.reject(new Error("undefined is not a function\n    at /opt/hookbox/dist/chunk.js:1:1")),
        cancel: () => undefined,
        continue: () => false,
        openApprovals: [],
        answerApproval: () => ({ ok: false as const, code: "NOT_FOUND" as const, message: "no approvals" }),
      }),
    };
    // The final event that settling writes: once it is committed, memory no longer answers for the run (runningTenant).
    const { manager, tenantWhenFinished } = managerWatchingRunEnds(store, buggy);
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const handle = await session.run("go");
    const events = await collect(manager.events(handle.runId));
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "failed", errorCode: "HOST_FAULT" });
    expect(tenantWhenFinished).toEqual([undefined]);
    const reason = (events.at(-1) as { reason: string }).reason;
    expect(reason).toContain("undefined is not a function");
    expect(reason).not.toContain("/opt/hookbox");
    expect(await store.getRun(handle.runId)).toMatchObject({ status: "failed", errorCode: "HOST_FAULT" });
    // The session is free for its next run.
    await expect(session.run("again")).resolves.toBeDefined();
  });

  it("refuses a second active run with SESSION_BUSY and accepts one after the first finishes", async () => {
    const { manager } = setup([{ toolCalls: [{ id: "c1", name: "a" }] }, { text: "ok" }, { text: "ok" }]);
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const [first, second] = await Promise.allSettled([session.run("a", { step: true }), session.run("b")]);
    expect(first.status).toBe("fulfilled");
    expect(second).toMatchObject({
      status: "rejected",
      reason: { code: "SESSION_BUSY", message: expect.stringMatching(/already has an active run/) },
    });
    const handle = (first as PromiseFulfilledResult<Awaited<ReturnType<typeof session.run>>>).value;
    await expect(session.run("c")).rejects.toMatchObject({ code: "SESSION_BUSY" });
    const pause = await waitForEvent(manager.events(handle.runId), "debugger.pause");
    expect(handle.continue(pause.pauseId)).toBe(true);
    await handle.wait();
    await expect((await session.run("d")).wait()).resolves.toMatchObject({ status: "completed" });
  });

  it("a delete racing a run start: a start whose session is deleted meanwhile is NOT_FOUND; a delete of a busy session names its run", async () => {
    dir = tempDir("hookbox-session-");
    const file = join(dir, "store.db");
    store = openStore(file);
    // A second process on the same file (another server, or the CLI's hookbox sessions delete), which cannot see
    // this process's runs in memory, only what the store has committed.
    const elsewhere = openStore(file);
    const runtime = new FakeRuntime("acme", [{ toolCalls: [{ id: "held", name: "a" }] }, { text: "done" }]);
    let parked!: () => void;
    const reached = new Promise<void>((resolve) => (parked = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const manager = new SessionManager({
      store,
      runtimeFor: async () => {
        parked();
        await gate;
        return runtime;
      },
    });
    const other = new SessionManager({ store: elsewhere, runtimeFor: async () => runtime });
    try {
      const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
      const starting = session.run("go");
      await reached; // the start has read its session and waits for its runtime
      await expect(manager.delete(session.id)).rejects.toMatchObject({
        code: "SESSION_BUSY",
        message: expect.stringContaining("has a run being started"),
      });
      expect(await other.delete(session.id)).toMatchObject({ sessionId: session.id });
      release();
      await expect(starting).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringContaining(session.id) });
      expect(await store.listRuns(session.id)).toEqual([]);

      // The other order: the run has started (its tool held), so both deletes are refused, naming it.
      let unblock!: () => void;
      runtime.blockedTools.set("held", new Promise<void>((resolve) => (unblock = resolve)));
      const busy = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
      const handle = await busy.run("go");
      for (const deleter of [manager, other])
        await expect(deleter.delete(busy.id)).rejects.toMatchObject({
          code: "SESSION_BUSY",
          message: expect.stringContaining(handle.runId),
        });
      unblock();
      await expect(handle.wait()).resolves.toMatchObject({ status: "completed" });
      expect(await other.delete(busy.id)).toMatchObject({ sessionId: busy.id });
    } finally {
      await elsewhere.close();
    }
  });

  it("startRunOf runs from the record its caller read, and a session deleted since that read is still NOT_FOUND", async () => {
    const { elsewhere, manager, other } = sharedStore([{ text: "done" }]);
    try {
      const kept = (await manager.get((await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) })).id))!;
      const handle = await manager.startRunOf(kept.record, "go", { tags: { run: "1" } });
      await expect(handle.wait()).resolves.toMatchObject({ status: "completed" });
      expect((await store.listRuns(kept.id)).map((run) => run.id)).toEqual([handle.runId]);

      const read = (await manager.get((await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) })).id))!;
      await other.delete(read.id);
      await expect(manager.startRunOf(read.record, "go")).rejects.toMatchObject({ code: "NOT_FOUND" });
      expect(await store.listRuns(read.id)).toEqual([]);
    } finally {
      await elsewhere.close();
    }
  });

  it("getRemembered answers from the record this process created or read, and forgets a session deleted or found gone", async () => {
    const { elsewhere, manager, other } = sharedStore();
    try {
      const created = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
      await other.delete(created.id);
      // Remembered: no store read, so the delete made by another process is not seen here (startRunOf checks it).
      expect(await manager.getRemembered(created.id)).toEqual(created.record);
      expect(await manager.get(created.id)).toBeUndefined();
      expect(await manager.getRemembered(created.id)).toBeUndefined();

      const deletedHere = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
      await manager.delete(deletedHere.id);
      expect(await manager.getRemembered(deletedHere.id)).toBeUndefined();

      const readThere = await other.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
      expect(await manager.getRemembered(readThere.id)).toEqual(readThere.record);
    } finally {
      await elsewhere.close();
    }
  });

  it("runningTenant knows a run executing here until its final event is handed over; the store answers for it after", async () => {
    const { elsewhere, runtime, other } = sharedStore([{ toolCalls: [{ id: "c1", name: "a" }] }, { text: "done" }]);
    // Told each event as it is committed, before any reader: the moment another process may delete a finished run.
    const { manager, tenantWhenFinished } = managerWatchingRunEnds(store, runtime);
    try {
      const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
      const handle = await session.run("go", { step: true });
      const pause = await waitForEvent(manager.events(handle.runId), "debugger.pause");
      expect(manager.runningTenant(handle.runId)).toBe("acme");
      expect(other.runningTenant(handle.runId)).toBeUndefined();
      // Why memory may answer while it runs: no process sharing the store can delete its session.
      await expect(other.delete(session.id)).rejects.toMatchObject({ code: "SESSION_BUSY" });
      handle.continue(pause.pauseId);
      await waitForEvent(manager.events(handle.runId), "run-finished");
      // Once its end is committed, another process may delete it: from then on, memory does not answer.
      expect(tenantWhenFinished).toEqual([undefined]);
      await other.delete(session.id);
      expect(manager.runningTenant(handle.runId)).toBeUndefined();
    } finally {
      await elsewhere.close();
    }
  });

  it("a remembered session deleted and made again under its id for another tenant is never run as the first tenant's", async () => {
    const { elsewhere, manager, other } = sharedStore([{ text: "done" }]);
    try {
      const created = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir), sessionId: "sess_reused" });
      await other.delete(created.id);
      await other.create({ tenant: "globex", tenantConfig: tenantConfig(dir), sessionId: "sess_reused" });
      const remembered = await manager.getRemembered("sess_reused");
      expect(remembered?.tenant).toBe("acme");
      await expect(manager.startRunOf(remembered!, "go")).rejects.toMatchObject({ code: "NOT_FOUND" });
      expect(await elsewhere.listRuns("sess_reused")).toEqual([]);
    } finally {
      await elsewhere.close();
    }
  });

  it("records a script file as it is on disk at each session's creation, a file rewritten at the same size included", async () => {
    const { manager } = setup();
    const config = tenantConfig(dir);
    const script = (config.scripts[0] as { path: string }).path;
    const recorded = async () => {
      const { record } = await manager.create({ tenant: "acme", tenantConfig: config });
      return (record.tenantConfig as { scripts: { source: string; sha256: string }[] }).scripts[0];
    };
    writeFileSync(script, "export default { v: 1 };\n");
    // A file written within the last 2 s may change again without its times moving: read again each time.
    expect((await recorded()).source).toBe("export default { v: 1 };\n");
    writeFileSync(script, "export default { v: 2 };\n");
    expect((await recorded()).source).toBe("export default { v: 2 };\n");
    // Older than that, its read is remembered by its stat; a rewrite of the same size moves its times.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await recorded()).source).toBe("export default { v: 2 };\n");
    // What the session records of a file read from the cache is what a fresh read records: nothing of the stat.
    expect(Object.keys(await recorded()).sort()).toEqual(["filename", "sha256", "source"]);
    expect((await recorded()).sha256).toBe(createHash("sha256").update("export default { v: 2 };\n").digest("hex"));
    writeFileSync(script, "export default { v: 3 };\n");
    expect((await recorded()).source).toBe("export default { v: 3 };\n");
  });

  it("shares one frozen tenant record among the sessions of an unchanged config, and records a change anew", async () => {
    const { manager } = setup();
    const config = tenantConfig(dir);
    const record = async (tenantConfig = config) => (await manager.create({ tenant: "acme", tenantConfig })).record.tenantConfig;
    const first = await record();
    // The same config again: the same record, which nothing can change under the sessions that share it.
    expect(await record()).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen((first as { scripts: object[] }).scripts[0])).toBe(true);
    // Another config of the same tenant records what it says.
    const changed = await record({ ...config, limits: { cpuMs: 300 } });
    expect(changed).not.toBe(first);
    expect(changed).toMatchObject({ limits: { cpuMs: 300 } });
    expect(await record({ ...config, limits: { cpuMs: 300 } })).toBe(changed);
  });

  it("merges per-run options over session defaults", async () => {
    const { manager, runtime } = setup([{ text: "x" }]);
    const session = await manager.create({
      tenant: "acme",
      tenantConfig: tenantConfig(dir),
      defaults: { maxIterations: 5, tags: { team: "a" }, step: false },
    });
    await (await session.run("hi", { tags: { run: "1" }, step: false, toolTimeoutMs: 100 })).wait();
    expect(runtime.requests[0].options).toEqual({ maxIterations: 5, tags: { team: "a", run: "1" }, step: false, toolTimeoutMs: 100 });
  });

  it("keeps an open pause in the store until it is continued", async () => {
    const { manager } = setup();
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const handle = await session.run("go", { step: true });
    const pause = await waitForEvent(manager.events(handle.runId), "debugger.pause");
    expect(await store.openPauses(handle.runId)).toMatchObject([{ pauseId: pause.pauseId }]);
    expect(handle.continue("p-other")).toBe(false);
    handle.continue(pause.pauseId);
    await handle.wait();
    expect(await store.openPauses(handle.runId)).toEqual([]);
  });

  it("reads events from any seq with no gap and no duplicate, live and stored", async () => {
    const { manager } = setup();
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const handle = await session.run("go", { step: true });
    const pause = await waitForEvent(manager.events(handle.runId), "debugger.pause");
    const reader = collect(manager.events(handle.runId, 2));
    handle.continue(pause.pauseId);
    const live = await reader;
    expect(live.map((e) => e.seq)).toEqual(live.map((_, i) => i + 3));
    expect(live.at(-1)?.type).toBe("run-finished");
    const stored = await collect(manager.events(handle.runId, 4));
    expect(stored.map((e) => e.seq)).toEqual(live.filter((e) => e.seq > 4).map((e) => e.seq));
  });

  it("a reader that joins a live run takes the events before it from the run's feed, not the store; past the feed's window, from the store", async () => {
    const { manager } = setup();
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const texts = async (runId: string, afterSeq: number) => {
      const out: { seq?: number; json: string }[] = [];
      for await (const item of manager.eventTexts(runId, afterSeq)) out.push(item);
      return out;
    };
    const first = await session.run("go", { step: true });
    const pause = await waitForEvent(manager.events(first.runId), "debugger.pause");
    const reads = vi.spyOn(store, "listEventTexts");
    const events = collect(manager.events(first.runId));
    const eventTexts = texts(first.runId, 1);
    first.continue(pause.pauseId);
    await first.wait();
    const all = await events;
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)?.type).toBe("run-finished");
    expect((await eventTexts).map((item) => item.json)).toEqual(all.slice(1).map((e) => JSON.stringify(e)));
    expect(reads).not.toHaveBeenCalled();
    // A window of two events: a reader from the start reads the ones before it from the store.
    const window = RECENT_EVENTS.limit;
    RECENT_EVENTS.limit = 2;
    try {
      const second = await session.run("again", { step: true });
      const paused = await waitForEvent(manager.events(second.runId, 1), "debugger.pause");
      const fromStart = collect(manager.events(second.runId));
      const textsFromStart = texts(second.runId, 0);
      second.continue(paused.pauseId);
      await second.wait();
      const stored = await fromStart;
      expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
      expect(stored.at(-1)?.type).toBe("run-finished");
      expect((await textsFromStart).map((item) => item.json)).toEqual(stored.map((e) => JSON.stringify(e)));
      expect(reads).toHaveBeenCalled();
    } finally {
      RECENT_EVENTS.limit = window;
    }
  });

  it("hands a run's events to the store with the snapshot that follows them: one write, checked and counted once", async () => {
    const { manager } = setup();
    const writes = vi.spyOn(store, "write");
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const handle = await session.run("go");
    await handle.wait();
    const ofRun = writes.mock.calls.map(([write]) => write).filter((write) => write.runId === handle.runId);
    // The fake loop emits run-started, then snapshots; each inference's two events, then its snapshot.
    expect(ofRun[0]).toMatchObject({ events: [{ event: { type: "run-started" } }], snapshot: { phase: "pre_inference" } });
    const withSnapshot = ofRun.filter((write) => write.snapshot?.phase === "post_inference");
    expect(withSnapshot.map((write) => write.events?.map(({ event }) => event.type))).toEqual([
      ["inference-started", "inference-finished"],
      ["inference-started", "inference-finished"],
    ]);
    const stored = await collect(manager.events(handle.runId));
    expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
    expect(ofRun.flatMap((write) => write.events ?? []).map(({ event }) => event.seq)).toEqual(stored.map((e) => e.seq));
  });

  it("resumes an interrupted run without re-executing a committed tool, re-running beforeToolCall for the rest, not beforeRun", async () => {
    dir = tempDir("hookbox-session-");
    store = openStore(join(dir, "store.db"));
    const model = writeModel(dir, [
      {
        toolCalls: [
          { id: "c1", name: "a", args: {} },
          { id: "c2", name: "b", args: {} },
        ],
        usage: { inputTokens: 300, outputTokens: 40 },
      },
      { text: "done" },
    ]);
    // Two real runtimes over the same files, one per "process": the first is interrupted while tool b runs.
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const first = await recordingRuntime(model, blocked);
    const manager = new SessionManager({ store, runtimeFor: async () => first.runtime });
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const handle = await session.run("go");
    // The calls run in parallel, in either order: wait until a has finished (committed) and b has started.
    await waitForEvent(manager.events(handle.runId), "tool-finished", (e) => e.callId === "c1");
    await waitForEvent(manager.events(handle.runId), "tool-started", (e) => e.callId === "c2");
    // A session's listed status is its own, not its last run's: running, interrupted, then idle once resumed.
    expect((await manager.list({ tenant: "acme" })).map((listed) => listed.status)).toEqual(["running"]);
    const interrupting = manager.interruptAll("draining");
    release();
    await interrupting;
    const interrupted = await store.getRun(handle.runId);
    expect(interrupted).toMatchObject({ status: "interrupted", reason: "draining" });
    expect((await manager.list({ tenant: "acme" })).map((listed) => [listed.status, listed.lastRun?.status])).toEqual([
      ["interrupted", "interrupted"],
    ]);
    expect([...first.executed].sort()).toEqual(["a", "b"]); // b started; its result was never committed
    expect(first.beforeRun).toEqual(["go"]);

    // A new process: new manager, new runtime, same file.
    await store.close();
    store = openStore(join(dir, "store.db"));
    const fresh = await recordingRuntime(model);
    const resumer = new SessionManager({ store, runtimeFor: async () => fresh.runtime });
    const resumed = await resumer.resume(session.id);
    expect(resumed.runId).toBe(handle.runId);
    expect(await resumed.wait()).toMatchObject({ status: "completed", iterations: 2, text: "done" });
    expect((await resumer.list()).map((listed) => [listed.status, listed.lastRun?.status])).toEqual([["idle", "completed"]]);
    expect(fresh.requests[0]!.resumeFrom).toMatchObject({
      // run-resumed takes the seq after the interruption; the loop goes on after it.
      nextSeq: interrupted!.lastSeq + 2,
      iterations: 1,
      inferenceId: interrupted!.inferenceId,
      // The budget goes on from what the interrupted run had used.
      usage: { inputTokens: 300, outputTokens: 40, costUsd: 0.25 },
    });
    expect(fresh.executed).toEqual(["b"]);
    expect(fresh.beforeToolCall).toEqual(["c2"]);
    // The run it continues already passed beforeRun: the resumed run does not ask again.
    expect(fresh.beforeRun).toEqual([]);
    const all = await collect(resumer.events(handle.runId));
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.filter((e) => e.type === "run-started")).toHaveLength(1);
    expect(all.filter((e) => e.type === "hook-decision" && e.hook === "beforeRun")).toHaveLength(1);
    expect(all.filter((e) => ["run-finished", "run-interrupted", "run-resumed"].includes(e.type)).map((e) => e.type)).toEqual([
      "run-interrupted",
      "run-resumed",
      "run-finished",
    ]);
    expect(all.filter((e) => e.type === "run-finished").map((e) => (e as { status: string }).status)).toEqual(["completed"]);
    await expect(resumer.resume(session.id)).rejects.toMatchObject({
      code: "NOT_RESUMABLE",
      message: expect.stringMatching(/is completed, not interrupted/),
    });
  });

  it("forks a session from a run: the fork continues that history, the source is untouched", async () => {
    const { manager, runtime } = setup([{ text: "a" }, { text: "b" }, { text: "c" }]);
    const session = await manager.create({ tenant: "acme", tenantConfig: tenantConfig(dir) });
    const first = await session.run("one");
    await first.wait();
    await (await session.run("two")).wait();
    const fork = await session.fork({ runId: first.runId });
    expect(fork.id).not.toBe(session.id);
    await (await fork.run("three")).wait();
    expect(runtime.requests[2].history?.blocks.map((b) => b.payload.text)).toEqual(["one", "a"]);
    expect((await manager.describe(fork.id))?.forkedFrom).toEqual({ sessionId: session.id, runId: first.runId });
    expect((await manager.describe(session.id))?.turns).toHaveLength(2);
    await expect(session.fork({ runId: "nope" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("records the tenant's script sources so a later process can rebuild the runtime", async () => {
    const { manager } = setup([{ text: "a" }]);
    const config = tenantConfig(dir);
    const session = await manager.create({ tenant: "acme", tenantConfig: config });
    writeFileSync((config.scripts[0] as { path: string }).path, "export default { changed: true };\n");
    const record = await store.getSession(session.id);
    expect(record?.tenantConfig.scripts).toMatchObject([{ source: "export default {};\n" }]);
    await expect(
      manager.create({ tenant: "acme", tenantConfig: { ...config, scripts: [{ path: join(dir, "missing.ts") }] } }),
    ).rejects.toThrow(/missing\.ts/);
  });
});

async function waitForEvent<T extends HookboxEvent["type"]>(
  events: AsyncIterable<HookboxEvent>,
  type: T,
  match: (event: Extract<HookboxEvent, { type: T }>) => boolean = () => true,
): Promise<Extract<HookboxEvent, { type: T }>> {
  for await (const event of events) {
    if (event.type === type && match(event as Extract<HookboxEvent, { type: T }>)) return event as Extract<HookboxEvent, { type: T }>;
  }
  throw new Error(`no ${type} event`);
}

function writeModel(dir: string, steps: unknown[]): string {
  const file = join(dir, "model.json");
  writeFileSync(file, JSON.stringify({ steps }));
  return file;
}

/**
 * The real tenant runtime (the real loop) with host tools `a` and `b` and a host hook set that record what ran;
 * `b` waits for `blocked` before it answers. Scripts are not needed here: no sandbox pool is made.
 */
async function recordingRuntime(model: string, blocked?: Promise<void>) {
  const executed: string[] = [];
  const beforeToolCall: string[] = [];
  const beforeRun: string[] = [];
  const requests: StartRunRequest[] = [];
  const noPool: SandboxPool = {
    tenant() {
      throw new Error("no sandbox in this test");
    },
    async close() {},
  };
  const tool = (name: string, wait?: Promise<void>) => ({
    name,
    description: name,
    parameters: { type: "object" },
    handler: async () => {
      executed.push(name);
      await wait;
      return { ran: name };
    },
  });
  const real = await createTenantRuntime({ name: "acme", scripts: [], model: { kind: "scripted", file: model } }, noPool, {
    host: {
      tools: [tool("a"), tool("b", blocked)],
      hooks: [
        {
          name: "recorder",
          beforeRun: (p) => void beforeRun.push(p.prompt),
          beforeToolCall: (p) => void beforeToolCall.push(p.call.id),
        },
      ],
    },
    pricing: { "*": { inputPerMTok: 500, outputPerMTok: 2500 } },
  });
  const runtime: TenantRuntime = {
    name: real.name,
    start(request) {
      requests.push(request);
      return real.start(request);
    },
  };
  return { runtime, executed, beforeToolCall, beforeRun, requests };
}

/**
 * A manager on `store` running `runtime`, and what `runningTenant` answered for each run at the moment its
 * `run-finished` was committed (onEvent sees each event then, before any reader).
 */
function managerWatchingRunEnds(
  store: Store,
  runtime: TenantRuntime,
): { manager: SessionManager; tenantWhenFinished: (string | undefined)[] } {
  const tenantWhenFinished: (string | undefined)[] = [];
  const manager: SessionManager = new SessionManager({
    store,
    runtimeFor: async () => runtime,
    onEvent: (_tenant, runId, event) => {
      if (event.type === "run-finished") tenantWhenFinished.push(manager.runningTenant(runId));
    },
  });
  return { manager, tenantWhenFinished };
}
