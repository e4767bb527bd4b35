import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HookboxEvent } from "../../src/events/types.js";
import { writeFixture } from "./fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";

/*
 * GET /v1/approvals and GET /v1/runs against the real `hookbox serve`: what a client watching a whole tenant
 * (the web inspector) lists, never another tenant's.
 */

const policy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: {
  beforeToolCall(p) { if (p.call.args.ask) return { action: "ask", reason: "record " + p.call.args.id + "?" }; },
} });
`;
const asking = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1", ask: true } }] }, { text: "done" }];

let server: ServeProcess;
beforeAll(async () => {
  const fixture = writeFixture([
    { name: "acme", key: "acme-key", steps: asking, scripts: { "policy.ts": policy } },
    { name: "globex", key: "globex-key", steps: asking, scripts: { "policy.ts": policy } },
  ]);
  server = await startServe(fixture);
});
afterAll(async () => server?.stop());

async function startAsking(key: string) {
  const client = api(server.url, key);
  const { sessionId } = (await client.request("POST", "/v1/sessions", {})).body;
  const { runId } = (await client.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record c1" })).body;
  const { messages } = await readEvents(server.url, key, runId, { stopWhen: (m) => m.event.type === "approval.requested" });
  return {
    sessionId: sessionId as string,
    runId: runId as string,
    requested: messages.at(-1)!.event as Extract<HookboxEvent, { type: "approval.requested" }>,
  };
}

describe("GET /v1/approvals", () => {
  it("lists every open approval of the caller's tenant across runs, oldest first, and drops an answered one", async () => {
    const acme = api(server.url, "acme-key");
    const first = await startAsking("acme-key");
    const second = await startAsking("acme-key");
    const theirs = await startAsking("globex-key");
    const listed = await acme.request("GET", "/v1/approvals");
    expect(listed.status).toBe(200);
    expect(listed.body.approvals).toEqual([
      {
        pauseId: first.requested.pauseId,
        runId: first.runId,
        sessionId: first.sessionId,
        callId: "c1",
        name: "record",
        args: { id: "c1", ask: true },
        reason: "record c1?",
        script: "policy",
        deadlineMs: first.requested.deadlineMs,
        openedMs: first.requested.timestampMs,
      },
      expect.objectContaining({ pauseId: second.requested.pauseId, runId: second.runId }),
    ]);
    const globex = (await api(server.url, "globex-key").request("GET", "/v1/approvals")).body.approvals;
    expect(globex.map((a: { runId: string }) => a.runId)).toEqual([theirs.runId]);

    expect(
      (await acme.request("POST", `/v1/runs/${first.runId}/approvals/${first.requested.pauseId}`, { decision: "reject" })).status,
    ).toBe(200);
    await readEvents(server.url, "acme-key", first.runId);
    const after = (await acme.request("GET", "/v1/approvals")).body.approvals;
    expect(after.map((a: { pauseId: string }) => a.pauseId)).toEqual([second.requested.pauseId]);
    for (const run of [second, theirs]) {
      const key = run === theirs ? "globex-key" : "acme-key";
      await api(server.url, key).request("POST", `/v1/runs/${run.runId}/cancel`);
    }
    expect((await acme.request("GET", "/v1/approvals")).body.approvals).toEqual([]);
  });
});

describe("GET /v1/sessions", () => {
  it("gives each session its own status (idle, running) beside its last run's", async () => {
    const client = api(server.url, "acme-key");
    const fresh = (await client.request("POST", "/v1/sessions", {})).body.sessionId as string;
    const asking = await startAsking("acme-key");
    const listed = async () => {
      const answer = await client.request("GET", "/v1/sessions?limit=1000");
      expect(answer.status).toBe(200);
      return new Map<string, { status: string; lastRun?: { status: string } }>(
        answer.body.sessions.map((session: { id: string }) => [session.id, session]),
      );
    };
    const waiting = await listed();
    expect(waiting.get(fresh)).toMatchObject({ status: "idle", runs: 0 });
    expect(waiting.get(fresh)?.lastRun).toBeUndefined();
    expect(waiting.get(asking.sessionId)).toMatchObject({ status: "running", runs: 1, lastRun: { id: asking.runId, status: "running" } });
    await client.request("POST", `/v1/runs/${asking.runId}/approvals/${asking.requested.pauseId}`, { decision: "approve" });
    await readEvents(server.url, "acme-key", asking.runId);
    // The run completed; the session is idle (ready for its next run).
    expect((await listed()).get(asking.sessionId)).toMatchObject({ status: "idle", lastRun: { status: "completed" } });
  });
});

describe("GET /v1/runs", () => {
  it("lists the tenant's runs latest first, filtered by session and status, a page at a time", async () => {
    const client = api(server.url, "acme-key");
    const running = await startAsking("acme-key");
    const { sessionId } = (await client.request("POST", "/v1/sessions", {})).body;
    const done: string[] = [];
    for (let i = 0; i < 3; i++) {
      const started = await client.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: `run ${i}` });
      const approval = (
        await readEvents(server.url, "acme-key", started.body.runId, { stopWhen: (m) => m.event.type === "approval.requested" })
      ).messages.at(-1)!.event as Extract<HookboxEvent, { type: "approval.requested" }>;
      await client.request("POST", `/v1/runs/${started.body.runId}/approvals/${approval.pauseId}`, { decision: "approve" });
      await readEvents(server.url, "acme-key", started.body.runId);
      done.push(started.body.runId);
    }
    const ofSession = await client.request("GET", `/v1/runs?sessionId=${sessionId}`);
    expect(ofSession.status).toBe(200);
    expect(ofSession.body.runs.map((r: { runId: string }) => r.runId)).toEqual([...done].reverse());
    expect(ofSession.body.runs[0]).toMatchObject({ sessionId, status: "completed", prompt: "run 2", iterations: 2 });
    expect(ofSession.body.next).toBeUndefined();

    const firstPage = await client.request("GET", `/v1/runs?sessionId=${sessionId}&limit=2`);
    expect(firstPage.body.runs.map((r: { runId: string }) => r.runId)).toEqual([done[2], done[1]]);
    expect(firstPage.body.next).toBe(done[1]);
    const secondPage = await client.request("GET", `/v1/runs?sessionId=${sessionId}&limit=2&before=${firstPage.body.next}`);
    expect(secondPage.body.runs.map((r: { runId: string }) => r.runId)).toEqual([done[0]]);
    expect(secondPage.body.next).toBeUndefined();

    const runningNow = (await client.request("GET", "/v1/runs?status=running")).body.runs.map((r: { runId: string }) => r.runId);
    expect(runningNow).toContain(running.runId);
    expect(runningNow).not.toContain(done[0]);
    const future = await client.request("GET", "/v1/runs?since=2999-01-01");
    expect(future.body.runs).toEqual([]);

    // Another tenant's runs never appear, and cannot be used as a cursor.
    const other = await startAsking("globex-key");
    const all = (await client.request("GET", "/v1/runs?limit=200")).body.runs.map((r: { runId: string }) => r.runId);
    expect(all).not.toContain(other.runId);
    expect((await client.request("GET", `/v1/runs?sessionId=${other.sessionId}`)).body.runs).toEqual([]);
    const probe = await client.request("GET", `/v1/runs?before=${other.runId}`);
    expect(probe.status).toBe(400);
    expect(probe.body.error).toMatchObject({ code: "VALIDATION", path: "before" });
    await client.request("POST", `/v1/runs/${running.runId}/cancel`);
    await api(server.url, "globex-key").request("POST", `/v1/runs/${other.runId}/cancel`);
  });

  it("refuses a bad filter with the parameter's name", async () => {
    const client = api(server.url, "acme-key");
    for (const [query, path] of [
      ["status=done", "status"],
      ["since=yesterday", "since"],
      ["limit=0", "limit"],
      ["limit=201", "limit"],
      ["limit=ten", "limit"],
    ]) {
      const answer = await client.request("GET", `/v1/runs?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error, query).toMatchObject({ code: "VALIDATION", path });
    }
    expect((await api(server.url, "wrong-key").request("GET", "/v1/runs")).status).toBe(401);
    expect((await api(server.url, "wrong-key").request("GET", "/v1/approvals")).status).toBe(401);
  });
});
