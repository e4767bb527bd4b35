import { afterEach, describe, expect, it } from "vitest";
import { thisProcessInstance, type Store } from "../../src/store/index.js";
import { event, run, session, turn } from "./helpers.js";
import { ledgerRowBytes } from "../../src/store/row-bytes.js";
import { usageDelta } from "../../src/store/usage.js";
import { planTurn } from "../../src/store/turn-plan.js";
import { allStores } from "./stores.js";

// The same behaviour from every store: SQLite, memory (the bench's baseline and the library default) and PostgreSQL.
const stores = allStores;

describe.each(stores)("%s store", (_name, open) => {
  let store: Store;
  afterEach(async () => store?.close());

  it("keeps sessions and lists them per tenant with their last run", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createSession(session("s2", "globex"));
    await store.createRun(run("r1", "s1"));
    expect((await store.getSession("s1"))?.defaults).toEqual({ maxIterations: 5 });
    expect(await store.getSession("nope")).toBeUndefined();
    const acme = await store.listSessions({ tenant: "acme" });
    expect(acme.map((s) => s.id)).toEqual(["s1"]);
    expect(acme[0].runs).toBe(1);
    expect(acme[0].lastRun).toMatchObject({ id: "r1", status: "running", prompt: "hello" });
    expect((await store.listSessions()).map((s) => s.id).sort()).toEqual(["s1", "s2"]);
  });

  it("lists a tenant's open pauses across its running runs, oldest first, and its runs latest first with filters", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createSession(session("s2", "acme"));
    await store.createSession(session("s3", "globex"));
    await store.createRun({ ...run("r1", "s1"), startedMs: 1000 });
    await store.createRun({ ...run("r2", "s2"), startedMs: 2000 });
    await store.createRun({ ...run("r3", "s3"), startedMs: 3000 });
    // A session has one running run at a time (PostgreSQL enforces it): r4 is a finished one.
    await store.createRun({ ...run("r4", "s1"), startedMs: 2000, status: "completed" });
    const ask = (runId: string, seq: number, pauseId: string, timestampMs: number) => ({
      ...event(runId, seq, {
        type: "approval.requested",
        pauseId,
        callId: "c1",
        name: "refund",
        args: { amount: 5 },
        reason: "why",
        script: "policy",
        deadlineMs: 9000,
      }),
      timestampMs,
    });
    await store.appendEvent("r2", ask("r2", 1, "p2", 500));
    await store.appendEvent("r1", ask("r1", 1, "p1", 700));
    await store.appendEvent("r3", ask("r3", 1, "p3", 100));
    const pauses = await store.listTenantPauses("acme");
    expect(pauses.map((p) => [p.pauseId, p.runId, p.sessionId, p.phase])).toEqual([
      ["p2", "r2", "s2", "approval"],
      ["p1", "r1", "s1", "approval"],
    ]);
    expect(pauses[0].pendingToolCalls).toEqual([{ id: "c1", name: "refund", args: { amount: 5 }, reason: "why", script: "policy" }]);
    // A run's end closes its pauses: its approval leaves the list.
    await store.appendEvent("r2", event("r2", 2, { type: "run-finished", status: "cancelled", iterations: 0 }));
    expect((await store.listTenantPauses("acme")).map((p) => p.pauseId)).toEqual(["p1"]);

    const ids = async (query: Partial<Parameters<Store["listTenantRuns"]>[0]>) =>
      (await store.listTenantRuns({ tenant: "acme", limit: 10, ...query })).map((r) => r.id);
    expect(await ids({})).toEqual(["r4", "r2", "r1"]);
    expect(await ids({ sessionId: "s1" })).toEqual(["r4", "r1"]);
    expect(await ids({ status: "cancelled" })).toEqual(["r2"]);
    expect(await ids({ sinceMs: 2000 })).toEqual(["r4", "r2"]);
    expect(await ids({ limit: 1 })).toEqual(["r4"]);
    expect(await ids({ beforeRunId: "r4" })).toEqual(["r2", "r1"]);
    expect(await ids({ beforeRunId: "r2", limit: 1 })).toEqual(["r1"]);
    expect(await ids({ sessionId: "s3" })).toEqual([]);
  });

  it("appends events gap-free and refuses a seq that does not follow", async () => {
    store = await open();
    await store.createSession(session());
    await store.createRun(run("r1"));
    await store.appendEvent("r1", event("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" }));
    await store.appendEvent("r1", event("r1", 2, { type: "inference-started", iteration: 1 }));
    await expect(store.appendEvent("r1", event("r1", 4, { type: "inference-started", iteration: 1 }))).rejects.toMatchObject({
      code: "STORE",
    });
    await expect(store.appendEvent("r1", event("r1", 2, { type: "inference-started", iteration: 1 }))).rejects.toMatchObject({
      code: "STORE",
    });
    expect((await store.listEvents("r1")).map((e) => e.seq)).toEqual([1, 2]);
    expect((await store.listEvents("r1", 1)).map((e) => e.type)).toEqual(["inference-started"]);
    expect((await store.getRun("r1"))?.lastSeq).toBe(2);
  });

  it("tracks pauses, iterations and the final status from the events", async () => {
    store = await open();
    await store.createSession(session());
    await store.createRun(run("r1"));
    await store.appendEvent("r1", event("r1", 1, { type: "inference-finished", iteration: 1, toolCalls: [] }));
    await store.appendEvent(
      "r1",
      event("r1", 2, {
        type: "debugger.pause",
        pauseId: "p1",
        phase: "after_inference",
        deadlineMs: 99,
        pendingToolCalls: [{ id: "c1", name: "t", args: {} }],
      }),
    );
    expect(await store.openPauses("r1")).toMatchObject([{ pauseId: "p1", phase: "after_inference", pendingToolCalls: [{ id: "c1" }] }]);
    await store.appendEvent("r1", event("r1", 3, { type: "debugger.continue", pauseId: "p1", reason: "continued" }));
    expect(await store.openPauses("r1")).toEqual([]);
    const snap = await store.saveSnapshot("r1", "post_inference", turn("t1", ["a"]));
    expect(snap).toMatchObject({ index: 1, lastSeq: 3, iterations: 1 });
    await store.appendEvent("r1", event("r1", 4, { type: "run-finished", status: "completed", text: "done", iterations: 1 }));
    expect(await store.getRun("r1")).toMatchObject({ status: "completed", iterations: 1, lastSeq: 4 });
  });

  it("keeps every snapshot in order with its phase", async () => {
    store = await open();
    await store.createSession(session());
    await store.createRun(run("r1"));
    await store.saveSnapshot("r1", "pre_inference", turn("t1", ["a"]));
    await store.saveSnapshot("r1", "post_inference", turn("t1", ["a", "b"]));
    await store.saveSnapshot("r1", "post_tools", turn("t1", ["a", "b", "c"]));
    const all = await store.listSnapshots("r1");
    expect(all.map((s) => [s.index, s.phase, s.turn.blocks.length])).toEqual([
      [1, "pre_inference", 1],
      [2, "post_inference", 2],
      [3, "post_tools", 3],
    ]);
    expect((await store.latestSnapshot("r1"))?.phase).toBe("post_tools");
    await expect(store.saveSnapshot("ghost", "final", turn("t", []))).rejects.toMatchObject({ code: "STORE" });
  });

  it("journals tool results per run", async () => {
    store = await open();
    await store.createSession(session());
    await store.createSession(session("s2"));
    await store.createRun(run("r1"));
    await store.createRun(run("r2", "s2"));
    const block = { id: "b1", kind: "tool_use" as const, payload: { id: "c1", result: 42 }, metadata: {} };
    await store.recordToolResult("r1", "c1", block);
    expect((await store.listToolResults("r1")).get("c1")).toEqual(block);
    expect((await store.listToolResults("r2")).size).toBe(0);
  });

  it("interrupts a run with run-interrupted; a resume takes the next epoch, writes run-resumed and goes on after it", async () => {
    store = await open();
    await store.createSession(session());
    await store.createRun(run("r1"));
    expect((await store.getRun("r1"))?.epoch).toBe(1);
    await store.appendEvent("r1", event("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" }));
    await store.appendEvent(
      "r1",
      event("r1", 2, { type: "debugger.pause", pauseId: "p1", phase: "after_tools", deadlineMs: 9, pendingToolCalls: [] }),
    );
    await store.markInterrupted("r1", "draining", { epoch: 2 }); // another owner's epoch: left alone
    expect((await store.getRun("r1"))?.status).toBe("running");
    await store.markInterrupted("r1", "draining", { epoch: 1 });
    expect(await store.getRun("r1")).toMatchObject({ status: "interrupted", reason: "draining", lastSeq: 3 });
    expect((await store.listEvents("r1", 2))[0]).toMatchObject({ type: "run-interrupted", reason: "draining", seq: 3 });
    expect(await store.openPauses("r1")).toEqual([]);
    await store.markInterrupted("r1", "again"); // an interrupted run is left alone
    expect((await store.getRun("r1"))?.lastSeq).toBe(3);
    const reopened = await store.reopenRun("r1", { ownerPid: process.pid, ownerInstance: thisProcessInstance(), iterations: 0 });
    expect(reopened).toMatchObject({ status: "running", lastSeq: 4, epoch: 2 });
    expect(await store.getRun("r1")).toMatchObject({ status: "running", lastSeq: 4, epoch: 2 });
    expect((await store.listEvents("r1", 3))[0]).toMatchObject({ type: "run-resumed", seq: 4, iterations: 0 });
    await expect(
      store.reopenRun("r1", { ownerPid: process.pid, ownerInstance: thisProcessInstance(), iterations: 0 }),
    ).rejects.toMatchObject({
      code: "NOT_RESUMABLE",
    });
    // The previous owner's writes (epoch 1) are refused whole; the new owner's go on after run-resumed.
    const late = event("r1", 5, { type: "inference-started", iteration: 1 });
    await expect(store.write({ runId: "r1", events: [{ event: late, json: JSON.stringify(late) }], epoch: 1 })).rejects.toMatchObject({
      code: "LEASE_LOST",
    });
    const block = { id: "b1", kind: "tool_use" as const, payload: { id: "c1", result: 1 }, metadata: {} };
    await expect(
      store.write({ runId: "r1", toolResults: [{ callId: "c1", blockJson: JSON.stringify(block) }], epoch: 1 }),
    ).rejects.toMatchObject({
      code: "LEASE_LOST",
    });
    expect((await store.listToolResults("r1")).size).toBe(0);
    await store.write({ runId: "r1", events: [{ event: late, json: JSON.stringify(late) }], epoch: 2 });
    expect((await store.getRun("r1"))?.lastSeq).toBe(5);
  });

  it("reads events in bounded pages: by count and by bytes, always at least one", async () => {
    store = await open();
    await store.createSession(session());
    await store.createRun(run("r1"));
    for (let seq = 1; seq <= 10; seq++) {
      await store.appendEvent(
        "r1",
        event("r1", seq, { type: "log", script: "s", level: "info", message: "x".repeat(seq === 5 ? 5000 : 10) }),
      );
    }
    expect((await store.listEvents("r1", 0, { limit: 3 })).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect((await store.listEvents("r1", 3, { limit: 3 })).map((e) => e.seq)).toEqual([4, 5, 6]);
    // The page ends with the event that reaches the byte bound.
    expect((await store.listEvents("r1", 3, { maxBytes: 1000 })).map((e) => e.seq)).toEqual([4, 5]);
    expect((await store.listEvents("r1", 4, { maxBytes: 1 })).map((e) => e.seq)).toEqual([5]);
    expect((await store.listEvents("r1", 10, { limit: 5 })).map((e) => e.seq)).toEqual([]);
    // The same page as stored text, for readers that pass it on without parsing it.
    const texts = await store.listEventTexts("r1", 3, { maxBytes: 1000 });
    expect(texts.map((t) => [t.seq, t.type])).toEqual([
      [4, "log"],
      [5, "log"],
    ]);
    expect(texts.map((t) => JSON.parse(t.json))).toEqual(await store.listEvents("r1", 3, { maxBytes: 1000 }));
  });

  it("pages and counts a session's runs", async () => {
    store = await open();
    await store.createSession(session());
    // One running run per session: the earlier ones have ended.
    for (const id of ["r1", "r2", "r3"]) await store.createRun({ ...run(id), status: "completed" });
    await store.createRun(run("r4"));
    expect(await store.countRuns("s1")).toBe(4);
    expect((await store.listRuns("s1", { offset: 1, limit: 2 })).map((r) => r.id)).toEqual(["r2", "r3"]);
    expect((await store.listRuns("s1", { offset: 3 })).map((r) => r.id)).toEqual(["r4"]);
  });

  it("counts each tenant's stored bytes and refuses a write over its quota, keeping nothing of it", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createSession(session("s2", "globex"));
    await store.createRun(run("r1", "s1"));
    const start = (await store.tenantUsage("acme")).storedBytes;
    expect(start).toBeGreaterThan(0);
    const small = event("r1", 1, { type: "log", script: "s", level: "info", message: "small" });
    await store.appendEvent("r1", small, { maxTenantBytes: start + 10_000 });
    const afterSmall = (await store.tenantUsage("acme")).storedBytes;
    expect(afterSmall - start).toBe(JSON.stringify(small).length);
    const big = event("r1", 2, { type: "log", script: "s", level: "info", message: "y".repeat(20_000) });
    await expect(store.appendEvent("r1", big, { maxTenantBytes: start + 10_000 })).rejects.toMatchObject({ code: "STORE_QUOTA" });
    await expect(
      store.saveSnapshot("r1", "final", turn("t", ["z".repeat(20_000)]), { maxTenantBytes: start + 10_000 }),
    ).rejects.toMatchObject({
      code: "STORE_QUOTA",
    });
    expect((await store.tenantUsage("acme")).storedBytes).toBe(afterSmall);
    expect(await store.getRun("r1")).toMatchObject({ lastSeq: 1 });
    expect(await store.latestSnapshot("r1")).toBeUndefined();
    expect((await store.tenantUsage("globex")).storedBytes).toBeLessThan(start);
    // Without a quota the same write goes through (final events are never refused).
    await store.appendEvent("r1", big);
    expect((await store.tenantUsage("acme")).storedBytes).toBeGreaterThan(afterSmall + 20_000);
    // Every tenant's counter in one read (what /metrics scrapes), the same figures.
    expect(await store.storedBytesByTenant()).toEqual(
      new Map([
        ["acme", (await store.tenantUsage("acme")).storedBytes],
        ["globex", (await store.tenantUsage("globex")).storedBytes],
      ]),
    );
  });

  it("keeps a write that takes the tenant exactly to its quota; one byte more is refused, naming the tenant and the bytes", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createRun(run("r1", "s1"));
    const start = (await store.tenantUsage("acme")).storedBytes;
    const first = event("r1", 1, { type: "log", script: "s", level: "info", message: "exactly at the quota" });
    const firstBytes = JSON.stringify(first).length;
    await store.appendEvent("r1", first, { maxTenantBytes: start + firstBytes });
    expect((await store.tenantUsage("acme")).storedBytes).toBe(start + firstBytes);
    const second = event("r1", 2, { type: "log", script: "s", level: "info", message: "one byte over" });
    const secondBytes = JSON.stringify(second).length;
    const stored = start + firstBytes;
    const quota = stored + secondBytes - 1;
    const refused = await store.appendEvent("r1", second, { maxTenantBytes: quota }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({
      code: "STORE_QUOTA",
      message: `tenant acme is over its store quota: ${stored} bytes stored + ${secondBytes} more would exceed ${quota}`,
      details: { tenant: "acme", storedBytes: stored, addedBytes: secondBytes, maxTenantBytes: quota },
    });
    expect(await store.getRun("r1")).toMatchObject({ lastSeq: 1 });
  });

  it("charges hook chain records, usage ledger rows and script versions to the tenant, refusing one over the quota", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createRun(run("r1", "s1"));
    const usageOf = async () => (await store.tenantUsage("acme")).storedBytes;
    const quota = (await usageOf()) + 50_000;
    const hookCall = (text: string) => ({
      runId: "r1",
      callId: "c1",
      hook: "afterToolCall",
      attempt: 1,
      shadow: false,
      verdict: "proceed",
      decision: {},
      payload: { result: text },
    });
    let before = await usageOf();
    await store.recordHookCall(hookCall("x".repeat(10_000)), { maxTenantBytes: quota });
    expect((await usageOf()) - before).toBeGreaterThan(10_000);
    before = await usageOf();
    await expect(store.recordHookCall(hookCall("y".repeat(60_000)), { maxTenantBytes: quota })).rejects.toMatchObject({
      code: "STORE_QUOTA",
    });
    expect(await usageOf()).toBe(before);
    expect((await store.listHookCalls("r1")).map((c) => c.index)).toEqual([1]);

    // An event that adds a ledger row counts the row too, in the same write.
    const inference = event("r1", 1, {
      type: "inference-finished",
      iteration: 1,
      toolCalls: [],
      usage: { inputTokens: 1, outputTokens: 1 },
    });
    await store.appendEvent("r1", inference, { maxTenantBytes: quota });
    expect((await usageOf()) - before).toBeGreaterThan(JSON.stringify(inference).length);

    const version = (text: string) => ({
      tenant: "acme",
      name: "policy",
      entry: "index.ts",
      files: { "index.ts": text },
      bundleHash: "h",
      warnings: [],
      createdMs: 1,
    });
    before = await usageOf();
    await store.createScriptVersion(version("a".repeat(5_000)), { maxTenantBytes: quota });
    expect((await usageOf()) - before).toBeGreaterThan(5_000);
    before = await usageOf();
    await expect(store.createScriptVersion(version("b".repeat(60_000)), { maxTenantBytes: quota })).rejects.toMatchObject({
      code: "STORE_QUOTA",
    });
    expect(await usageOf()).toBe(before);
    expect((await store.listScriptVersions("acme", "policy")).map((v) => v.version)).toEqual([1]);
    expect(await usageOf()).toBeLessThanOrEqual(quota);
  });

  it("keeps a usage ledger from the events: totals per tenant since a time, and per run", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createSession(session("s2", "globex"));
    await store.createRun(run("r1", "s1"));
    await store.createRun(run("r2", "s2"));
    const at = (seq: number, ms: number, body: Parameters<typeof event>[2]) => ({ ...event("r1", seq, body), timestampMs: ms });
    const usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.5 };
    await store.appendEvent("r1", at(1, 1000, { type: "run-started", prompt: "hello", runId: "r1" }));
    await store.appendEvent("r1", at(2, 1000, { type: "inference-finished", iteration: 1, toolCalls: [], usage }));
    await store.appendEvent("r1", at(3, 2000, { type: "tool-finished", callId: "c", name: "t", attempt: 1, durationMs: 1, result: null }));
    await store.appendEvent("r1", at(4, 3000, { type: "inference-finished", iteration: 2, toolCalls: [], usage }));
    await store.appendEvent(
      "r1",
      at(5, 3000, { type: "run-finished", status: "completed", iterations: 2, usage: { ...usage, sandboxCpuMs: 1.5 } }),
    );
    await store.appendEvent("r2", { ...event("r2", 1, { type: "run-started", prompt: "x", runId: "r2" }), timestampMs: 1000 });

    expect(await store.usageTotals("acme", 0)).toEqual({
      runs: 1,
      inferences: 2,
      inputTokens: 200,
      outputTokens: 40,
      tokens: 240,
      costUsd: 1,
      toolCalls: 1,
      sandboxCpuMs: 1.5,
    });
    expect(await store.usageTotals("acme", 2500)).toMatchObject({ runs: 0, inferences: 1, tokens: 120, toolCalls: 0, sandboxCpuMs: 1.5 });
    expect(await store.usageTotals("globex", 0)).toMatchObject({ runs: 1, inferences: 0, tokens: 0 });
    expect(await store.usageTotals("nobody", 0)).toMatchObject({ runs: 0, tokens: 0, costUsd: 0 });
    expect(await store.runUsage("r1")).toEqual({ inputTokens: 200, outputTokens: 40, costUsd: 1 });
    expect(await store.runUsage("r2")).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0 });
  });

  it("keeps a session's blocks once, in its log: a snapshot adds only the blocks new since the run's last one", async () => {
    store = await open();
    await store.createSession(session());
    await store.createRun(run("r1"));
    const grown = async (action: () => Promise<unknown>) => {
      const before = (await store.tenantUsage("acme")).storedBytes;
      await action();
      return (await store.tenantUsage("acme")).storedBytes - before;
    };
    const big = "x".repeat(5_000);
    const first = turn("t1", [big, "b"]);
    expect(await grown(() => store.saveSnapshot("r1", "pre_inference", first))).toBeGreaterThan(5_000);
    // The same turn plus one block: the big block is not written again.
    const second = {
      ...first,
      blocks: [...first.blocks, { id: "t1-b2", kind: "llm_text" as const, payload: { text: "c" }, metadata: {} }],
    };
    expect(await grown(() => store.saveSnapshot("r1", "post_inference", second))).toBeLessThan(1_000);
    // A copy parsed from JSON (what a script middleware returns) is the same blocks: nothing new.
    expect(await grown(() => store.saveSnapshot("r1", "post_tools", JSON.parse(JSON.stringify(second))))).toBeLessThan(1_000);
    // A rewritten turn: the middle block replaced and the first dropped. Only the new block is added.
    const rewritten = { ...second, blocks: [{ ...second.blocks[1], payload: { text: "B" } }, second.blocks[2]] };
    expect(await grown(() => store.saveSnapshot("r1", "final", rewritten))).toBeLessThan(1_000);
    const snapshots = await store.listSnapshots("r1");
    expect(snapshots.map((s) => s.turn)).toEqual([first, second, second, rewritten]);
    expect(JSON.parse((await store.latestSnapshotText("r1"))!.turnJson)).toEqual(rewritten);
    expect((await store.latestSnapshotInfo("r1"))?.stored).toMatchObject({
      layout: {
        segments: [
          { session: "s1", from: 3, to: 4 },
          { session: "s1", from: 2, to: 3 },
        ],
      },
    });
  });

  it("starts a session's next run from its latest snapshot, and a fork from its source's blocks without copying them", async () => {
    store = await open();
    await store.createSession(session("s1"));
    expect(await store.sessionHistory("s1")).toBeUndefined();
    await store.createRun(run("r1"));
    await store.saveSnapshot("r1", "final", turn("t1", ["a", "b"]));
    await store.appendEvent("r1", event("r1", 1, { type: "run-finished", status: "completed", iterations: 0 }));
    await store.createRun(run("r2"));
    // r2 was cut off before its first snapshot: the history is still r1's.
    expect(await store.sessionHistory("s1")).toMatchObject({ snapshot: { runId: "r1", index: 1 } });
    const history = (await store.sessionHistory("s1"))!;
    expect(await store.readTurn(history.stored)).toEqual(turn("t1", ["a", "b"]));
    expect(await store.sessionHistory("s1", { beforeRunId: "r1" })).toBeUndefined();
    const stored = (await store.latestSnapshotInfo("r1"))!.stored;
    if (!("layout" in stored)) throw new Error("expected a layout");
    const before = (await store.tenantUsage("acme")).storedBytes;
    await store.createSession({ ...session("s2"), forkedFrom: { sessionId: "s1", runId: "r1" }, base: stored.layout });
    expect((await store.tenantUsage("acme")).storedBytes - before).toBeLessThan(1_000);
    const forked = (await store.sessionHistory("s2"))!;
    expect(forked.snapshot).toBeUndefined();
    expect(await store.readTurn(forked.stored)).toEqual(turn("t1", ["a", "b"]));
    // The fork's own blocks go to its own log; its snapshots name the source's log for the rest.
    await store.createRun(run("f1", "s2"));
    const next = turn("t1", ["a", "b", "c"]);
    await store.saveSnapshot("f1", "final", { ...next, blocks: [...(await store.readTurn(forked.stored)).blocks, next.blocks[2]] });
    expect((await store.latestSnapshotInfo("f1"))?.stored).toMatchObject({
      layout: {
        segments: [
          { session: "s1", from: 0, to: 2 },
          { session: "s2", from: 0, to: 1 },
        ],
      },
    });
    expect((await store.latestSnapshot("f1"))?.turn.blocks.map((b) => b.payload.text)).toEqual(["a", "b", "c"]);
    expect((await store.latestSnapshot("r1"))?.turn.blocks.map((b) => b.payload.text)).toEqual(["a", "b"]);
  });

  it("deletes a session with everything of it, freeing exactly what it was charged but its usage ledger rows", async () => {
    store = await open();
    await store.createSession(session("keep", "acme"));
    await store.createRun(run("k1", "keep"));
    const before = (await store.tenantUsage("acme")).storedBytes;
    await store.createSession(session("s1", "acme"));
    await store.createRun(run("r1", "s1"));
    const inference = event("r1", 1, {
      type: "inference-finished",
      iteration: 1,
      toolCalls: [],
      usage: { inputTokens: 3, outputTokens: 4 },
    });
    await store.appendEvent("r1", inference);
    await store.recordToolResult("r1", "c1", turn("t", ["tool"]).blocks[0]);
    await store.recordHookCall({
      runId: "r1",
      callId: "c1",
      hook: "afterToolCall",
      attempt: 1,
      shadow: false,
      verdict: "proceed",
      decision: {},
      payload: { x: 1 },
    });
    await store.saveSnapshot("r1", "final", turn("t1", ["a", "b"]));
    await store.appendEvent("r1", event("r1", 2, { type: "run-finished", status: "completed", iterations: 1 }));
    await store.createRun(run("r2", "s1"));
    await store.appendEvent("r2", event("r2", 1, { type: "run-finished", status: "completed", iterations: 0 }));
    const charged = (await store.tenantUsage("acme")).storedBytes;
    expect(charged - before).toBeGreaterThan(500);

    expect(await store.deleteSession("s1")).toEqual({
      sessionId: "s1",
      tenant: "acme",
      freedBytes: charged - before - ledgerRowBytes(usageDelta(inference)),
    });
    expect((await store.tenantUsage("acme")).storedBytes).toBe(before + ledgerRowBytes(usageDelta(inference)));
    expect(await store.getSession("s1")).toBeUndefined();
    expect(await store.getRun("r1")).toBeUndefined();
    expect(await store.listEvents("r1")).toEqual([]);
    expect(await store.listHookCalls("r1")).toEqual([]);
    expect((await store.listToolResults("r1")).size).toBe(0);
    expect((await store.listSessions({ tenant: "acme" })).map((s) => s.id)).toEqual(["keep"]);
    // What was spent stays billable.
    expect(await store.usageTotals("acme", 0)).toMatchObject({ inputTokens: 3, outputTokens: 4 });
    await expect(store.deleteSession("s1")).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await store.getRun("k1")).toMatchObject({ sessionId: "keep" });
  });

  it("refuses to delete a session with a running run or with forks that keep their history in it", async () => {
    store = await open();
    await store.createSession(session("s1"));
    await store.createRun(run("r1"));
    await expect(store.deleteSession("s1")).rejects.toMatchObject({ code: "SESSION_BUSY", message: expect.stringContaining("r1") });
    await store.saveSnapshot("r1", "final", turn("t1", ["a"]));
    await store.appendEvent("r1", event("r1", 1, { type: "run-finished", status: "completed", iterations: 0 }));
    const stored = (await store.latestSnapshotInfo("r1"))!.stored;
    if (!("layout" in stored)) throw new Error("expected a layout");
    await store.createSession({ ...session("s2"), forkedFrom: { sessionId: "s1", runId: "r1" }, base: stored.layout });
    await expect(store.deleteSession("s1")).rejects.toMatchObject({ code: "SESSION_FORKED", message: expect.stringContaining("s2") });
    expect(await store.getRun("r1")).toBeDefined();
    await store.deleteSession("s2");
    await store.deleteSession("s1");
    expect(await store.listSessions()).toEqual([]);
  });

  it("a run start naming its tenant is refused NOT_FOUND when the session under that id is another tenant's", async () => {
    store = await open();
    await store.createSession(session("shared-id", "globex"));
    await expect(store.createRun(run("r-acme", "shared-id"), { tenant: "acme" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await store.getRun("r-acme")).toBeUndefined();
    await store.createRun(run("r-globex", "shared-id"), { tenant: "globex" });
    expect(await store.getRun("r-globex")).toMatchObject({ sessionId: "shared-id" });
  });

  it("a run start and a delete of its session racing: one wins whole, the start NOT_FOUND or the delete SESSION_BUSY naming the run", async () => {
    store = await open();
    await store.createSession(session("gone"));
    await store.deleteSession("gone");
    await expect(store.createRun(run("late", "gone"))).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: expect.stringContaining("gone"),
    });
    // Issued together, in both orders: whichever commits first decides, and the other is refused with its own code.
    for (const [index, startFirst] of [true, false, true, false].entries()) {
      const id = `race${index}`;
      await store.createSession(session(id));
      const start = () => store.createRun(run(`r-${id}`, id));
      const remove = () => store.deleteSession(id);
      const [started, deleted] = startFirst
        ? await Promise.allSettled([start(), remove()])
        : await Promise.allSettled([remove(), start()]).then(([removed, begun]) => [begun, removed] as const);
      if (started.status === "fulfilled") {
        expect(deleted).toMatchObject({
          status: "rejected",
          reason: { code: "SESSION_BUSY", message: expect.stringContaining(`r-${id}`) },
        });
        expect(await store.getRun(`r-${id}`)).toMatchObject({ status: "running" });
      } else {
        expect(started).toMatchObject({ reason: { code: "NOT_FOUND" } });
        expect(deleted.status).toBe("fulfilled");
        expect(await store.getRun(`r-${id}`)).toBeUndefined();
        expect(await store.getSession(id)).toBeUndefined();
      }
    }
  });

  it("lists a tenant's sessions idle since a time, newest first", async () => {
    store = await open();
    await store.createSession({ ...session("old"), createdMs: 1000 });
    await store.createRun({ ...run("r-old", "old"), startedMs: 2000 });
    await store.createSession({ ...session("used"), createdMs: 1500 });
    await store.createRun({ ...run("r-used", "used"), startedMs: 9000 });
    await store.createSession({ ...session("empty"), createdMs: 3000 });
    await store.createSession({ ...session("other", "globex"), createdMs: 1000 });
    expect(await store.staleSessions("acme", 5000, 10)).toEqual(["empty", "old"]);
    expect(await store.staleSessions("acme", 5000, 1)).toEqual(["empty"]);
    expect(await store.staleSessions("acme", 2000, 10)).toEqual([]);
    expect(await store.staleSessions("acme", 10_000, 10)).toEqual(["empty", "used", "old"]);
  });

  it("applies writes issued together each on its own, in order: one refused does not undo the others", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createSession(session("s2", "globex"));
    await store.createRun(run("r1", "s1"));
    await store.createRun(run("r2", "s2"));
    const quota = (await store.tenantUsage("globex")).storedBytes + 100;
    const log = (runId: string, seq: number, message: string) => event(runId, seq, { type: "log", script: "s", level: "info", message });
    const writes = [
      store.appendEvent("r1", log("r1", 1, "kept")),
      store.appendEvent("r2", log("r2", 1, "z".repeat(1_000)), { maxTenantBytes: quota }),
      store.appendEvent("r1", log("r1", 3, "does not follow")),
      store.appendEvent("r2", log("r2", 1, "kept too")),
      store.appendEvent("r1", log("r1", 2, "kept as well")),
    ];
    const settled = await Promise.allSettled(writes);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled", "fulfilled"]);
    expect(settled[1]).toMatchObject({ reason: { code: "STORE_QUOTA" } });
    expect(settled[2]).toMatchObject({ reason: { code: "STORE" } });
    expect((await store.listEvents("r1")).map((e) => e.type === "log" && e.message)).toEqual(["kept", "kept as well"]);
    expect((await store.listEvents("r2")).map((e) => e.type === "log" && e.message)).toEqual(["kept too"]);
  });

  it("checks each of a run's writes issued together against what the writes before it kept", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createRun(run("r1", "s1"));
    const quota = (await store.tenantUsage("acme")).storedBytes + 2_000;
    const owner = { runId: "r1", sessionId: "s1", tenant: "acme", epoch: 1 };
    const logged = (seq: number, message: string, maxTenantBytes?: number) => {
      const written = event("r1", seq, { type: "log", script: "s", level: "info", message });
      return store.write({
        ...owner,
        events: [{ event: written, json: JSON.stringify(written) }],
        ...(maxTenantBytes ? { maxTenantBytes } : {}),
      });
    };
    const snapshot = (index: number, lastSeq: number) => {
      const plan = planTurn(undefined, turn("t1", [`after ${lastSeq}`]));
      const { pieces, headJson, blockBytes } = plan;
      return store.write({
        ...owner,
        snapshot: { phase: "post_inference", index, pieces, headJson, blockBytes, lastSeq, iterations: 0, createdMs: 1 },
      });
    };
    const block = { id: "b1", kind: "tool_use" as const, payload: { id: "c1", result: 1 }, metadata: {} };
    const settled = await Promise.allSettled([
      logged(1, "kept"),
      snapshot(1, 1),
      logged(2, "z".repeat(3_000), quota), // over the quota: nothing of it is kept
      snapshot(2, 2), // follows an event that was not kept
      store.write({ ...owner, epoch: 2, toolResults: [{ callId: "c1", blockJson: JSON.stringify(block) }] }), // not the run's epoch
      logged(2, "kept too"),
      snapshot(2, 2),
    ]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected", "rejected", "fulfilled", "fulfilled"]);
    expect(settled[2]).toMatchObject({ reason: { code: "STORE_QUOTA" } });
    expect(settled[3]).toMatchObject({ reason: { code: "STORE", message: expect.stringContaining("committed seq is 1") } });
    expect(settled[4]).toMatchObject({ reason: { code: "LEASE_LOST" } });
    expect((await store.listEvents("r1")).map((e) => e.type === "log" && e.message)).toEqual(["kept", "kept too"]);
    expect((await store.listSnapshotInfos("r1")).map((info) => [info.index, info.lastSeq])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect((await store.listToolResults("r1")).size).toBe(0);
  });

  it("a read sees every write issued before it, awaited or not", async () => {
    store = await open();
    await store.createSession(session());
    await store.createRun(run("r1"));
    const written = store.appendEvent("r1", event("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" }));
    expect(await store.getRun("r1")).toMatchObject({ lastSeq: 1 });
    await written;
  });

  it("keeps all-time usage as a running total that agrees with the ledger", async () => {
    store = await open();
    await store.createSession(session("s1", "acme"));
    await store.createRun(run("r1", "s1"));
    for (let seq = 1; seq <= 20; seq++) {
      const usage = { inputTokens: seq, outputTokens: 2 * seq, costUsd: seq / 1000 };
      await store.appendEvent("r1", {
        ...event("r1", seq, { type: "inference-finished", iteration: seq, toolCalls: [], usage }),
        timestampMs: 10 + seq,
      });
    }
    const allTime = await store.usageTotals("acme", 0);
    expect(allTime).toMatchObject({ inferences: 20, inputTokens: 210, outputTokens: 420 });
    expect(allTime.costUsd).toBeCloseTo(0.21, 9);
    const fromLedger = await store.usageTotals("acme", 1);
    expect({ ...fromLedger, costUsd: 0 }).toEqual({ ...allTime, costUsd: 0 });
    expect(fromLedger.costUsd).toBeCloseTo(allTime.costUsd, 9);
  });
});
