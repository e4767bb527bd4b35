import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { twoToolSteps, writeFixture } from "./fixture.js";
import { openStore } from "../../src/store/index.js";

/*
 * Deleting sessions on a real `hookbox serve`: DELETE /v1/sessions/:id and a tenant's retention ({runsDays}), each
 * freeing the tenant's store quota (GET /v1/usage's storedBytes falls by what was freed).
 */

let server: ServeProcess;
let storeFile: string;
const RETENTION_DAYS = 6 / 86_400; // 6 s: the server sweeps every second (a tenth of it, at least 1 s)

beforeAll(async () => {
  const fixture = writeFixture([
    { name: "acme", key: "acme-key", steps: twoToolSteps, extra: { retention: { runsDays: RETENTION_DAYS } } },
    { name: "globex", key: "globex-key", steps: twoToolSteps },
  ]);
  storeFile = fixture.store;
  server = await startServe({ config: fixture.config, store: fixture.store });
});
afterAll(async () => {
  await server?.stop();
});

async function finishedSession(key: string): Promise<string> {
  const client = api(server.url, key);
  const { body } = await client.request("POST", "/v1/sessions", {});
  const started = await client.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "record both" });
  const read = await readEvents(server.url, key, started.body.runId);
  expect(read.messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed" });
  return body.sessionId;
}

const storedBytes = async (key: string): Promise<number> => (await api(server.url, key).request("GET", "/v1/usage")).body.storedBytes;

describe("DELETE /v1/sessions/:id", () => {
  it("deletes the session with its runs and frees its bytes of the quota; another tenant's is 404; a running one is 409", async () => {
    const globex = api(server.url, "globex-key");
    const sessionId = await finishedSession("globex-key");
    const runId = (await globex.request("GET", `/v1/sessions/${sessionId}`)).body.turns[0].runId;
    const before = await storedBytes("globex-key");

    expect((await api(server.url, "acme-key").request("DELETE", `/v1/sessions/${sessionId}`)).status).toBe(404);
    const deleted = await globex.request("DELETE", `/v1/sessions/${sessionId}`);
    expect(deleted).toMatchObject({ status: 200, body: { deleted: true, sessionId } });
    expect(deleted.body.freedBytes).toBeGreaterThan(1000);
    expect(await storedBytes("globex-key")).toBe(before - deleted.body.freedBytes);
    expect((await globex.request("GET", `/v1/sessions/${sessionId}`)).status).toBe(404);
    expect((await globex.request("GET", `/v1/runs/${runId}`)).status).toBe(404);
    expect((await globex.request("DELETE", `/v1/sessions/${sessionId}`)).status).toBe(404);
    expect(await globex.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "again" })).toMatchObject({
      status: 404,
      body: { error: { code: "NOT_FOUND" } },
    });

    const { body } = await globex.request("POST", "/v1/sessions", {});
    const paused = await globex.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "record both", step: true });
    await readEvents(server.url, "globex-key", paused.body.runId, { stopWhen: (m) => m.event.type === "debugger.pause" });
    expect(await globex.request("DELETE", `/v1/sessions/${body.sessionId}`)).toMatchObject({
      status: 409,
      body: { error: { code: "SESSION_BUSY" } },
    });
    await globex.request("POST", `/v1/runs/${paused.body.runId}/cancel`);
  });
});

describe("a session serve remembers (src/session/known-sessions.ts)", () => {
  it("is still its tenant's alone, and once deleted by another process its runs are 404 and a new run is refused", async () => {
    const globex = api(server.url, "globex-key");
    const sessionId = await finishedSession("globex-key");
    const runId = (await globex.request("GET", `/v1/sessions/${sessionId}`)).body.turns[0].runId;
    const acme = api(server.url, "acme-key");
    expect((await acme.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "not yours" })).status).toBe(404);
    expect((await acme.request("GET", `/v1/runs/${runId}`)).status).toBe(404);
    expect((await acme.request("GET", `/v1/runs/${runId}/events`)).status).toBe(404);

    const elsewhere = openStore(storeFile);
    try {
      await elsewhere.deleteSession(sessionId);
    } finally {
      await elsewhere.close();
    }
    expect(await globex.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "again" })).toMatchObject({
      status: 404,
      body: { error: { code: "NOT_FOUND" } },
    });
    expect((await globex.request("GET", `/v1/runs/${runId}`)).status).toBe(404);
    expect((await globex.request("GET", `/v1/runs/${runId}/events`)).status).toBe(404);
    const elsewhereAgain = openStore(storeFile);
    try {
      expect(await elsewhereAgain.listRuns(sessionId)).toEqual([]);
    } finally {
      await elsewhereAgain.close();
    }
  });
});

describe("a run serve is executing (SessionManager.runningTenant)", () => {
  it("streams its events to its tenant alone, and once it ended and another process deleted it, to no one", async () => {
    const globex = api(server.url, "globex-key");
    const { body } = await globex.request("POST", "/v1/sessions", {});
    const { body: run } = await globex.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "record both", step: true });
    await readEvents(server.url, "globex-key", run.runId, { stopWhen: (m) => m.event.type === "debugger.pause" });
    // Answered from what serve recorded at the run's start: another tenant's key gets a missing run's 404.
    // (Its status alone: were it served, the stream would stay open until the run ends.)
    const stranger = await fetch(`${server.url}/v1/runs/${run.runId}/events`, { headers: { authorization: "Bearer acme-key" } });
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
    const elsewhere = openStore(storeFile);
    try {
      await expect(elsewhere.deleteSession(body.sessionId)).rejects.toMatchObject({ code: "SESSION_BUSY" });
      await globex.request("POST", `/v1/runs/${run.runId}/cancel`);
      const read = await readEvents(server.url, "globex-key", run.runId);
      expect(read.messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "cancelled" });
      await elsewhere.deleteSession(body.sessionId);
    } finally {
      await elsewhere.close();
    }
    expect(await globex.request("GET", `/v1/runs/${run.runId}/events`)).toMatchObject({
      status: 404,
      body: { error: { code: "NOT_FOUND" } },
    });
  });
});

describe("retention", () => {
  it("deletes a tenant's sessions idle longer than runsDays and frees their bytes; a tenant without retention keeps its own", async () => {
    const kept = await finishedSession("globex-key");
    const old = await finishedSession("acme-key");
    const charged = await storedBytes("acme-key");
    expect(charged).toBeGreaterThan(1000);
    await expect
      .poll(async () => (await api(server.url, "acme-key").request("GET", `/v1/sessions/${old}`)).status, {
        timeout: 30_000,
        interval: 250,
      })
      .toBe(404);
    expect(await storedBytes("acme-key")).toBeLessThan(charged - 1000);
    expect((await api(server.url, "globex-key").request("GET", `/v1/sessions/${kept}`)).status).toBe(200);
  });
});
