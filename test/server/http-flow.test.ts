import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request as httpRequest } from "node:http";
import { startPgServer, type PgServer } from "../helpers/postgres.js";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

// One real `hookbox serve` process per store kind (a SQLite file, then a PostgreSQL database on a throwaway
// server): every case below holds on both (docs/scale-out.md); each test uses its own sessions.
let server: ServeProcess;
let pg: PgServer | undefined;
const acme = () => api(server.url, "acme-key");
const globex = () => api(server.url, "globex-key");

async function startOn(storeKind: "sqlite" | "postgres") {
  const fixture = writeFixture(
    [
      { name: "acme", key: "acme-key", steps: twoToolSteps },
      { name: "globex", key: "globex-key", steps: twoToolSteps, envKey: "GLOBEX_KEY" },
      { name: "tiny", key: "tiny-key", steps: [{ text: "hi" }], limits: { runsPerMinute: 2 } },
    ],
    { server: { maxBodyBytes: 64 * 1024 } },
  );
  pg = storeKind === "postgres" ? await startPgServer() : undefined;
  const store = pg ? await pg.createDatabase("hookbox_http") : fixture.store;
  server = await startServe({ config: fixture.config, store, env: { GLOBEX_KEY: "globex-key" } });
}

/** A POST whose body goes in 4 KiB chunks with Transfer-Encoding: chunked (no Content-Length): status and JSON answer. */
function chunkedPost(path: string, body: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${server.url}${path}`,
      { method: "POST", headers: { authorization: "Bearer acme-key", "content-type": "application/json" } },
      (response) => {
        let text = "";
        response.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    request.on("error", reject);
    for (let at = 0; at < body.length; at += 4096) request.write(body.slice(at, at + 4096));
    request.end();
  });
}

/** Reads the run's stream to its end, continuing every step pause over HTTP as it arrives. */
function finishStepping(runId: string, options: { lastEventId?: string; key?: string } = {}) {
  const key = options.key ?? "acme-key";
  return readEvents(server.url, key, runId, {
    ...(options.lastEventId !== undefined ? { lastEventId: options.lastEventId } : {}),
    onMessage: (m) => {
      if (m.event.type === "debugger.pause")
        void api(server.url, key).request("POST", `/v1/runs/${runId}/continue`, { pauseId: m.event.pauseId });
    },
  });
}

async function pausedRun(client = acme(), key = "acme-key") {
  const {
    body: { sessionId },
  } = await client.request("POST", "/v1/sessions", {});
  const started = await client.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both", step: true });
  expect(started.status).toBe(202);
  const { messages } = await readEvents(server.url, key, started.body.runId, { stopWhen: (m) => m.event.type === "debugger.pause" });
  const pause = messages.at(-1)!.event as Extract<(typeof messages)[number]["event"], { type: "debugger.pause" }>;
  return { sessionId, runId: started.body.runId as string, pauseId: pause.pauseId, seen: messages };
}

describe.each(["sqlite", "postgres"] as const)("hookbox serve over HTTP (%s store)", (storeKind) => {
  beforeAll(() => startOn(storeKind), 120_000);
  afterAll(async () => {
    await server?.stop();
    await pg?.stop();
  });

  it("answers /healthz without a key and refuses /v1 without a valid one", async () => {
    expect((await api(server.url, undefined).request("GET", "/healthz")).status).toBe(200);
    expect(await api(server.url, undefined).request("POST", "/v1/sessions", {})).toMatchObject({
      status: 401,
      body: { error: { code: "UNAUTHORIZED" } },
    });
    expect((await api(server.url, "wrong").request("POST", "/v1/sessions", {})).status).toBe(401);
    expect((await globex().request("POST", "/v1/sessions", {})).status).toBe(201); // the {env} key works
    // Headers are read from Node's request (src/server/request-headers.ts): an X-Api-Key as a client spells it.
    expect((await api(server.url, undefined).request("POST", "/v1/sessions", {}, { "X-Api-Key": "acme-key" })).status).toBe(201);
    expect((await api(server.url, undefined).request("POST", "/v1/sessions", {}, { "X-Api-Key": "wrong" })).status).toBe(401);
  });

  it("a session's second run replays the same call ids (c1, c2) and runs them again; ids are sess_/run_/inf_", async () => {
    const client = acme();
    const created = await client.request("POST", "/v1/sessions", {});
    const sessionId = created.body.sessionId as string;
    expect(sessionId).toMatch(/^sess_[0-9a-f]{32}$/);
    for (const prompt of ["first", "second"]) {
      const started = await client.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt });
      expect(started.status).toBe(202);
      expect(started.body.runId).toMatch(/^run_[0-9a-f]{32}$/);
      expect(started.body.inferenceId).toMatch(/^inf_[0-9a-f]{32}$/);
      const { messages } = await readEvents(server.url, "acme-key", started.body.runId);
      const finished = messages.map((m) => m.event).filter((e) => e.type === "tool-finished");
      expect(finished.map((e) => e.callId).sort()).toEqual(["c1", "c2"]); // made in parallel: either order
      expect(messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
    }
  });

  it("runs the full step-mode flow: pause over SSE, continue over HTTP, run-finished ends the stream", async () => {
    const { sessionId, runId, pauseId, seen } = await pausedRun();
    expect(seen.map((m) => m.id)).toEqual(seen.map((m) => String(m.event.seq)));
    expect(seen[0].event).toMatchObject({ type: "run-started", seq: 1, sessionId });
    expect(await acme().request("POST", `/v1/runs/${runId}/continue`, { pauseId })).toMatchObject({
      status: 200,
      body: { continued: true },
    });
    expect((await acme().request("POST", `/v1/runs/${runId}/continue`, { pauseId })).status).toBe(404);
    const rest = await finishStepping(runId, { lastEventId: seen.at(-1)!.id! });
    expect(rest.ended).toBe(true);
    const all = [...seen, ...rest.messages].map((m) => m.event);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(
      all
        .filter((e) => e.type === "tool-finished")
        .map((e) => (e as { callId: string }).callId)
        .sort(),
    ).toEqual(["c1", "c2"]);
    expect(all.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
    expect(all.filter((e) => e.type === "debugger.continue").every((e) => (e as { reason: string }).reason === "continued")).toBe(true);
    const session = await acme().request("GET", `/v1/sessions/${sessionId}`);
    expect(session).toMatchObject({
      status: 200,
      body: { sessionId, status: "idle", turns: [{ runId, status: "completed", phase: "final" }] },
    });
  });

  it("resumes an SSE stream with Last-Event-ID: no gap, no duplicate", async () => {
    const { runId, pauseId } = await pausedRun();
    const first = await readEvents(server.url, "acme-key", runId, { stopWhen: (m) => m.event.seq === 2 });
    await acme().request("POST", `/v1/runs/${runId}/continue`, { pauseId });
    const second = await finishStepping(runId, { lastEventId: "2" });
    const whole = await readEvents(server.url, "acme-key", runId);
    const joined = [...first.messages, ...second.messages].map((m) => m.id);
    expect(joined).toEqual(whole.messages.map((m) => m.id));
    expect(whole.messages.at(-1)?.event.type).toBe("run-finished");
  });

  it("refuses a second run while one is active (409) and accepts one after it finishes", async () => {
    const { sessionId, runId, pauseId } = await pausedRun();
    expect(await acme().request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "again" })).toMatchObject({
      status: 409,
      body: { error: { code: "SESSION_BUSY" } },
    });
    await acme().request("POST", `/v1/runs/${runId}/continue`, { pauseId });
    expect((await finishStepping(runId)).messages.at(-1)?.event).toMatchObject({ type: "run-finished", status: "completed" });
    expect((await acme().request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "again" })).status).toBe(202);
  });

  it("hides one tenant's sessions, runs and pauses from another (404), and binds pause ids to their run", async () => {
    const a = await pausedRun();
    const b = await pausedRun(globex(), "globex-key");
    const intruder = globex();
    expect((await intruder.request("GET", `/v1/sessions/${a.sessionId}`)).status).toBe(404);
    expect((await intruder.request("POST", `/v1/sessions/${a.sessionId}/runs`, { prompt: "x" })).status).toBe(404);
    expect((await intruder.request("GET", `/v1/runs/${a.runId}`)).status).toBe(404);
    expect((await readEvents(server.url, "globex-key", a.runId)).status).toBe(404);
    expect((await intruder.request("POST", `/v1/runs/${a.runId}/continue`, { pauseId: a.pauseId })).status).toBe(404);
    expect((await intruder.request("POST", `/v1/runs/${a.runId}/cancel`)).status).toBe(404);
    const listed = await intruder.request("GET", "/v1/sessions");
    expect(listed.body.sessions.map((s: { id: string }) => s.id)).not.toContain(a.sessionId);
    // globex's own run, continued with acme's pause id: unknown pause.
    expect((await intruder.request("POST", `/v1/runs/${b.runId}/continue`, { pauseId: a.pauseId })).status).toBe(404);
    expect((await acme().request("GET", `/v1/runs/${a.runId}`)).body).toMatchObject({
      status: "running",
      pauses: [{ pauseId: a.pauseId }],
    });
    expect((await intruder.request("POST", `/v1/runs/${b.runId}/cancel`)).status).toBe(200);
    expect((await readEvents(server.url, "globex-key", b.runId)).messages.at(-1)?.event).toMatchObject({
      type: "run-finished",
      status: "cancelled",
    });
    await acme().request("POST", `/v1/runs/${a.runId}/cancel`);
  });

  it("answers malformed and oversized bodies with 4xx naming the problem, and keeps serving", async () => {
    const {
      body: { sessionId },
    } = await acme().request("POST", "/v1/sessions");
    const runs = `/v1/sessions/${sessionId}/runs`;
    expect(await acme().request("POST", runs, "{not json")).toMatchObject({ status: 400, body: { error: { code: "INVALID_JSON" } } });
    expect(await acme().request("POST", runs, {})).toMatchObject({
      status: 400,
      body: { error: { code: "VALIDATION", path: "$.prompt" } },
    });
    expect(await acme().request("POST", runs, { prompt: "x", stepp: true })).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringContaining('"stepp"') } },
    });
    expect(await acme().request("POST", runs, { prompt: "x", maxIterations: "ten" })).toMatchObject({
      status: 400,
      body: { error: { path: "$.maxIterations" } },
    });
    expect(await acme().request("POST", runs, { prompt: "x", tags: { a: 1 } })).toMatchObject({
      status: 400,
      body: { error: { path: "$.tags.a" } },
    });
    expect((await acme().request("POST", runs, [1, 2])).status).toBe(400);
    expect((await acme().request("POST", runs, "null")).status).toBe(400);
    expect(await acme().request("POST", runs, { prompt: "x".repeat(100 * 1024) })).toMatchObject({
      status: 413,
      body: { error: { code: "BODY_TOO_LARGE" } },
    });
    expect((await acme().request("POST", "/v1/runs/nope/continue", "{")).status).toBe(404);
    expect((await acme().request("GET", "/v1/runs/nope/events", undefined, { "last-event-id": "abc" })).status).toBe(404);
    expect((await acme().request("GET", "/v1/no/such/route")).status).toBe(404);
    const started = await acme().request("POST", runs, { prompt: "still fine" });
    expect(started.status).toBe(202);
    const events = await readEvents(server.url, "acme-key", started.body.runId, { lastEventId: "0" });
    expect(events.messages.at(-1)?.event).toMatchObject({ type: "run-finished", status: "completed" });
    expect((await acme().request("GET", `/v1/runs/${started.body.runId}/events`, undefined, { "last-event-id": "abc" })).status).toBe(400);
  });

  it("holds a body sent without a Content-Length (chunked) to the same limit while reading it", async () => {
    const {
      body: { sessionId },
    } = await acme().request("POST", "/v1/sessions");
    const runs = `/v1/sessions/${sessionId}/runs`;
    const over = await chunkedPost(runs, JSON.stringify({ prompt: "x".repeat(100 * 1024) }));
    expect(over).toMatchObject({ status: 413, body: { error: { code: "BODY_TOO_LARGE" } } });
    const under = await chunkedPost(runs, JSON.stringify({ prompt: "chunked and small" }));
    expect(under.status).toBe(202);
    const events = await readEvents(server.url, "acme-key", (under.body as { runId: string }).runId);
    expect(events.messages.at(-1)?.event).toMatchObject({ type: "run-finished", status: "completed" });
  });

  it("rate-limits run starts per tenant (429 with Retry-After) without touching other tenants", async () => {
    const tiny = api(server.url, "tiny-key");
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 3; i++) {
      const {
        body: { sessionId },
      } = await tiny.request("POST", "/v1/sessions", {});
      const response = await tiny.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "hi" });
      statuses.push(response.status);
      if (response.status === 429) retryAfter = response.headers.get("retry-after");
    }
    expect(statuses).toEqual([202, 202, 429]);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    const {
      body: { sessionId },
    } = await acme().request("POST", "/v1/sessions", {});
    expect((await acme().request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "hi" })).status).toBe(202);
  });
});
