import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { HookboxEvent } from "../../src/events/types.js";
import { usePgServer } from "../helpers/postgres.js";
import { writeFixture, type TenantFixture } from "./fixture.js";
import { api, readEvents, startServe, useServeProcesses, type ServeProcess, type SseMessage } from "./serve-process.js";

/*
 * Many `hookbox serve` processes on one PostgreSQL database (docs/scale-out.md), each a real server on loopback
 * with the store named by its config (`store: postgres://...`), on a throwaway PostgreSQL cluster
 * (test/helpers/postgres.ts). A run started on one node streams from another, is continued through another, and
 * keeps its session busy on every node; a node killed with SIGKILL has its run taken over once its lease expires,
 * without running a committed tool again; a node stopped with SIGSTOP past its lease writes nothing more.
 */

const LEASE_MS = 2000;
const pg = usePgServer();
const servers = useServeProcesses();

const threeSteps = [
  { toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] },
  { toolCalls: [{ id: "c2", name: "record", args: { id: "c2" } }] },
  { text: "both recorded" },
];

/** `nodes` servers on a fresh database, serving tenant acme (`tenant` adds to or replaces its fields). */
async function cluster(nodes: number, tenant: Partial<TenantFixture> = {}, server: Record<string, unknown> = {}) {
  const url = await pg.createDatabase("hookbox_cluster");
  const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: threeSteps, ...tenant }], {
    store: url,
    server: { leaseMs: LEASE_MS, ...server },
  });
  const started: ServeProcess[] = [];
  // One after the other: the first migrates the database; the rest find it migrated (or wait on the lock).
  for (let i = 0; i < nodes; i++) {
    const server = await startServe({ config: fixture.config });
    servers.push(server);
    started.push(server);
  }
  return { fixture, nodes: started };
}

const readLog = (log: string) => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : []);
const types = (messages: SseMessage[]) => messages.map((m) => m.event.type);

function expectWholeRun(messages: SseMessage[]) {
  const events = messages.map((m) => m.event);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(messages.map((m) => m.id)).toEqual(events.map((e) => String(e.seq)));
  expect(events.filter((e) => e.type === "run-finished")).toHaveLength(1);
  expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
}

describe("many hookbox serve processes on one PostgreSQL database", () => {
  it("a run started on node A streams from B, is continued through C, keeps its session busy on every node, and finishes", async () => {
    const { fixture, nodes } = await cluster(3);
    const [a, b, c] = nodes.map((node) => api(node.url, "acme-key"));
    const session = await a.request("POST", "/v1/sessions", {});
    const started = await a.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "record both", step: true });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const runId = started.body.runId as string;

    const continued: number[] = [];
    // C's answer to the last continue may come after the run it resumed has finished and B's stream ended.
    const answers: Promise<void>[] = [];
    const stream = readEvents(nodes[1].url, "acme-key", runId, {
      onMessage: (m) => {
        if (m.event.type !== "debugger.pause") return;
        const pauseId = m.event.pauseId;
        answers.push(
          c.request("POST", `/v1/runs/${runId}/continue`, { pauseId }).then((answer) => {
            expect(answer, JSON.stringify(answer.body)).toMatchObject({ status: 200, body: { continued: true } });
            continued.push(m.event.seq);
          }),
        );
      },
    });
    // While it runs, its session is busy on every node.
    for (const client of [a, b, c]) {
      const second = await client.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "again" });
      expect(second.status, JSON.stringify(second.body)).toBe(409);
      expect(second.body.error.code).toBe("SESSION_BUSY");
    }
    const { messages, ended } = await stream;
    await Promise.all(answers);
    expect(ended).toBe(true);
    expectWholeRun(messages);
    expect(continued.length).toBe(types(messages).filter((t) => t === "debugger.pause").length);
    expect(continued.length).toBeGreaterThanOrEqual(2);
    expect(readLog(fixture.log).filter((line) => line.startsWith("tool "))).toHaveLength(2);
    // Any node describes it, and a pause id of the finished run is unknown on every node.
    for (const client of [a, b, c]) expect((await client.request("GET", `/v1/runs/${runId}`)).body).toMatchObject({ status: "completed" });
    expect((await c.request("POST", `/v1/runs/${runId}/continue`, { pauseId: "pause_nope" })).status).toBe(404);
    // The session is free again on every node.
    const next = await b.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "again" });
    expect(next.status, JSON.stringify(next.body)).toBe(202);
  }, 120_000);

  it("cancel and approvals reach the owner from another node", async () => {
    const policy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: {
  beforeToolCall(p) { if (p.call.args.ask) return { action: "ask", reason: "record " + p.call.args.id + "?" }; },
} });
`;
    const steps = [
      { toolCalls: [{ id: "c1", name: "record", args: { id: "c1", ask: true } }] },
      { toolCalls: [{ id: "c2", name: "record", args: { id: "c2", ask: true } }] },
      { text: "done" },
    ];
    const {
      fixture,
      nodes: [a, b],
    } = await cluster(2, { steps, scripts: { "policy.ts": policy } });
    const [onA, onB] = [api(a.url, "acme-key"), api(b.url, "acme-key")];
    const session = await onA.request("POST", "/v1/sessions", {});
    const runId = (await onA.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "record" })).body.runId as string;
    const asked = async () => {
      const { messages } = await readEvents(b.url, "acme-key", runId, {
        stopWhen: (m) => m.event.type === "approval.requested" && !seen.has(m.event.pauseId),
      });
      const event = messages.at(-1)!.event as Extract<HookboxEvent, { type: "approval.requested" }>;
      seen.add(event.pauseId);
      return event;
    };
    const seen = new Set<string>();
    const first = await asked();
    // A wrong answer is refused by the owner, through B, with the owner's status and path.
    const wrong = await onB.request("POST", `/v1/runs/${runId}/approvals/${first.pauseId}`, { decision: "approve", args: { id: 7 } });
    expect(wrong.status, JSON.stringify(wrong.body)).toBe(400);
    expect(wrong.body.error).toMatchObject({ code: "VALIDATION", path: "$.args.id" });
    const approved = await onB.request("POST", `/v1/runs/${runId}/approvals/${first.pauseId}`, { decision: "approve" });
    expect(approved, JSON.stringify(approved.body)).toMatchObject({ status: 200, body: { pauseId: first.pauseId, decision: "approved" } });
    await asked();
    const cancelled = await onB.request("POST", `/v1/runs/${runId}/cancel`);
    expect(cancelled, JSON.stringify(cancelled.body)).toMatchObject({ status: 200, body: { cancelled: true } });
    const { messages } = await readEvents(b.url, "acme-key", runId);
    expect(messages.at(-1)?.event).toMatchObject({ type: "run-finished", status: "cancelled" });
    expect(readLog(fixture.log).filter((line) => line.startsWith("tool "))).toHaveLength(1);
    // The run is over: cancel through either node is RUN_NOT_ACTIVE.
    expect((await onB.request("POST", `/v1/runs/${runId}/cancel`)).body.error.code).toBe("RUN_NOT_ACTIVE");
  }, 120_000);

  it("kill -9 of the owner while paused: another node takes the run over after the lease, it finishes, and the committed tool is not run again", async () => {
    const { fixture, nodes } = await cluster(2);
    const [a, b] = nodes;
    const onA = api(a.url, "acme-key");
    const session = await onA.request("POST", "/v1/sessions", {});
    const runId = (await onA.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "record both", step: true })).body
      .runId as string;
    // Continue until the pause after c1's tool: its result is committed.
    const before = await readEvents(b.url, "acme-key", runId, {
      onMessage: (m) => {
        if (m.event.type === "debugger.pause" && m.event.phase === "after_inference")
          void onA.request("POST", `/v1/runs/${runId}/continue`, { pauseId: m.event.pauseId });
      },
      stopWhen: (m) => m.event.type === "debugger.pause" && m.event.phase === "after_tools",
    });
    expect(readLog(fixture.log).filter((line) => line.startsWith("tool "))).toEqual([`tool ${session.body.sessionId} c1`]);
    a.child.kill("SIGKILL");
    const killedAt = Date.now();
    await a.exited;

    // B's reader goes on from where it was; B takes the run over and it is continued through B.
    const onB = api(b.url, "acme-key");
    let resumedAt = 0;
    const after = await readEvents(b.url, "acme-key", runId, {
      lastEventId: before.messages.at(-1)!.id!,
      onMessage: (m) => {
        if (m.event.type === "run-resumed") resumedAt = Date.now();
        if (m.event.type === "debugger.pause") void onB.request("POST", `/v1/runs/${runId}/continue`, { pauseId: m.event.pauseId });
      },
    });
    const all = [...before.messages, ...after.messages];
    expectWholeRun(all);
    const interrupted = all.findIndex((m) => m.event.type === "run-interrupted");
    expect(interrupted).toBeGreaterThan(0);
    expect(all[interrupted + 1]?.event).toMatchObject({ type: "run-resumed", node: expect.any(String) });
    expect(resumedAt - killedAt).toBeLessThan(LEASE_MS + 8000);
    // c1 ran once (on A, committed); c2 once (on B).
    expect(readLog(fixture.log).filter((line) => line.startsWith("tool "))).toEqual([
      `tool ${session.body.sessionId} c1`,
      `tool ${session.body.sessionId} c2`,
    ]);
    expect((await onB.request("GET", `/v1/runs/${runId}`)).body).toMatchObject({ status: "completed", epoch: 2 });
  }, 120_000);

  it("an owner stopped (SIGSTOP) past its lease and continued writes nothing more, and its tool does not run twice", async () => {
    const steps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1", hookDelayMs: 1500 } }] }, { text: "both recorded" }];
    const { fixture, nodes } = await cluster(2, { steps });
    const [a, b] = nodes;
    const onA = api(a.url, "acme-key");
    const session = await onA.request("POST", "/v1/sessions", {});
    const sessionId = session.body.sessionId as string;
    const runId = (await onA.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record" })).body.runId as string;
    // A is inside c1's beforeToolCall hook (it sleeps 1.5 s on its first call): stop it there.
    const deadline = Date.now() + 30_000;
    while (!readLog(fixture.log).includes(`before ${sessionId} c1`)) {
      if (Date.now() > deadline) throw new Error(`the hook never started: ${a.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    a.child.kill("SIGSTOP");
    // B takes the run over once A's lease expires, and finishes it.
    const { messages } = await readEvents(b.url, "acme-key", runId);
    expectWholeRun(messages);
    expect(types(messages)).toContain("run-resumed");
    const tools = () => readLog(fixture.log).filter((line) => line.startsWith("tool "));
    expect(tools()).toEqual([`tool ${sessionId} c1`]);
    // A wakes up past its lease: its hook returns, its fence finds the lease lost, and it writes and runs nothing.
    a.child.kill("SIGCONT");
    const onBAfter = api(b.url, "acme-key");
    const settleUntil = Date.now() + LEASE_MS + 1500;
    while (Date.now() < settleUntil) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(tools()).toEqual([`tool ${sessionId} c1`]);
    const again = await readEvents(b.url, "acme-key", runId, { lastEventId: "0" });
    expect(again.messages.map((m) => m.event)).toEqual(messages.map((m) => m.event));
    expect((await onBAfter.request("GET", `/v1/runs/${runId}`)).body).toMatchObject({ status: "completed", epoch: 2 });
    // A is alive and serving.
    expect((await onA.request("GET", `/v1/runs/${runId}`)).body).toMatchObject({ status: "completed" });
  }, 120_000);
  it("a node that cannot reach the database says so in /healthz and starts no runs; it serves again once the database is back", async () => {
    const { nodes } = await cluster(1);
    const [a] = nodes;
    const onA = api(a.url, "acme-key");
    const healthy = await onA.request("GET", "/healthz");
    expect(healthy).toMatchObject({ status: 200, body: { ok: true, node: expect.any(String), store: { reachable: true } } });
    const session = await onA.request("POST", "/v1/sessions", {});
    const restarted = pg.restart({ downMs: 4000 });
    try {
      let down: Awaited<ReturnType<typeof onA.request>> | undefined;
      for (let tries = 0; tries < 60 && down?.status !== 503; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        down = await onA.request("GET", "/healthz");
      }
      expect(down, JSON.stringify(down?.body)).toMatchObject({
        status: 503,
        body: { error: { code: "STORE_UNAVAILABLE" }, ok: false, store: { reachable: false } },
      });
      expect(down!.body.store.reason).toMatch(/cannot be reached/);
      const refused = await onA.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "record both" });
      expect(refused.status, JSON.stringify(refused.body)).toBe(503);
      expect(refused.body.error.code).toBe("STORE_UNAVAILABLE");
    } finally {
      await restarted;
    }
    let back: Awaited<ReturnType<typeof onA.request>> | undefined;
    for (let tries = 0; tries < 100 && back?.status !== 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      back = await onA.request("GET", "/healthz");
    }
    expect(back?.body).toMatchObject({ ok: true, store: { reachable: true } });
    const started = await onA.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "record both" });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const { messages } = await readEvents(a.url, "acme-key", started.body.runId);
    expectWholeRun(messages);
  }, 120_000);
  it("a run drained by SIGTERM on A is resumed through B (POST /v1/sessions/:id/resume) and finishes there, its committed tool not run again", async () => {
    const steps = [
      { toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] },
      { toolCalls: [{ id: "c2", name: "record", args: { id: "c2", delayMs: 20_000 } }] },
      { text: "both recorded" },
    ];
    const {
      fixture,
      nodes: [a, b],
    } = await cluster(2, { steps }, { drainMs: 200 });
    const [onA, onB] = [api(a.url, "acme-key"), api(b.url, "acme-key")];
    const sessionId = (await onA.request("POST", "/v1/sessions", {})).body.sessionId as string;
    const runId = (await onA.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both" })).body.runId as string;
    // Drained while c2's tool runs (c1's result is committed: its tool-finished came before c2 started).
    const before = await readEvents(b.url, "acme-key", runId, {
      onMessage: (m) => {
        if (m.event.type === "tool-started" && m.event.callId === "c2") a.child.kill("SIGTERM");
      },
    });
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(before.messages.at(-1)?.event).toMatchObject({ type: "run-interrupted", reason: expect.stringMatching(/SIGTERM/) });
    expect((await onB.request("GET", `/v1/runs/${runId}`)).body).toMatchObject({ status: "interrupted" });

    const resumed = await onB.request("POST", `/v1/sessions/${sessionId}/resume`);
    expect(resumed, JSON.stringify(resumed.body)).toMatchObject({ status: 202, body: { runId } });
    const after = await readEvents(b.url, "acme-key", runId, { lastEventId: before.messages.at(-1)!.id! });
    expect(after.messages[0]?.event).toMatchObject({ type: "run-resumed", node: expect.any(String) });
    expectWholeRun([...before.messages, ...after.messages]);
    const tools = readLog(fixture.log).filter((line) => line.startsWith("tool "));
    expect(tools.filter((line) => line.endsWith(" c1"))).toHaveLength(1);
    expect(tools.filter((line) => line.endsWith(" c2"))).toHaveLength(2);
    expect((await onB.request("GET", `/v1/runs/${runId}`)).body).toMatchObject({ status: "completed", epoch: 2 });
  }, 120_000);

  it("a tenant's rate limits hold across nodes: runs started on A count on B", async () => {
    const {
      nodes: [a, b],
    } = await cluster(2, { steps: [{ text: "both recorded" }], limits: { runsPerMinute: 2 } });
    const [onA, onB] = [api(a.url, "acme-key"), api(b.url, "acme-key")];
    for (const client of [onA, onB]) {
      const session = await client.request("POST", "/v1/sessions", {});
      const started = await client.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "hi" });
      expect(started.status, JSON.stringify(started.body)).toBe(202);
    }
    // Two runs this minute already, one through each node: the third is refused on either.
    for (const client of [onA, onB]) {
      const session = await client.request("POST", "/v1/sessions", {});
      const third = await client.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "hi" });
      expect(third.status, JSON.stringify(third.body)).toBe(429);
      expect(third.body.error).toMatchObject({ code: "RATE_LIMITED", message: expect.stringMatching(/2 runs per minute/) });
      expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
    }
  }, 120_000);
});
