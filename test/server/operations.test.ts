import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * Operating a real `hookbox serve`: Prometheus metrics behind an operator key, a config reload (SIGHUP and
 * POST /v1/admin/reload) that adds a tenant and rotates a key while another tenant's paused run goes on, a
 * refused config that leaves the old one serving, stream tokens for EventSource, 204 for a finished stream,
 * CORS, and paging through sessions.
 */

const sha = (key: string) => createHash("sha256").update(key).digest("hex");
let server: ServeProcess;
let fixture: ReturnType<typeof writeFixture>;
let original: Record<string, any>;
const acme = () => api(server.url, "acme-key");
const admin = () => api(server.url, "admin-key");

/** Waits until the server's stderr has `count` lines containing `text`. */
async function stderrLines(text: string, count: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (
    server
      .stderr()
      .split("\n")
      .filter((line) => line.includes(text)).length < count
  ) {
    if (Date.now() > deadline) throw new Error(`no "${text}" on stderr: ${server.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }], {
    server: { adminKeys: [{ sha256: sha("admin-key") }], cors: { origins: ["https://app.example.com"] } },
  });
  original = JSON.parse(readFileSync(fixture.config, "utf8"));
  server = await startServe({ config: fixture.config, store: fixture.store });
});
afterAll(async () => {
  await server?.stop();
});

async function finishedRun(client = acme(), key = "acme-key") {
  const { body } = await client.request("POST", "/v1/sessions", {});
  const started = await client.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "record both" });
  const read = await readEvents(server.url, key, started.body.runId);
  return { sessionId: body.sessionId as string, runId: started.body.runId as string, messages: read.messages };
}

describe("GET /metrics", () => {
  it("answers Prometheus text to an operator key, 401 to a tenant key and to no key", async () => {
    await finishedRun();
    const response = await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer admin-key" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    const text = await response.text();
    expect(text).toMatch(/^hookbox_runs_finished_total\{tenant="acme",status="completed"\} [1-9]\d*$/m);
    expect(text).toMatch(/^hookbox_run_duration_seconds_bucket\{tenant="acme",status="completed",le="\+Inf"\} [1-9]\d*$/m);
    // The fixture's host hook (count-hooks) ran once per call.
    expect(text).toMatch(/^hookbox_hook_duration_seconds_count\{tenant="acme",hook="beforeToolCall"\} [1-9]\d*$/m);
    expect(text).toMatch(/^hookbox_store_bytes\{tenant="acme"\} [1-9]\d*$/m);
    expect(text).toMatch(/^# TYPE hookbox_sandbox_worker_restarts_total counter$/m);
    expect(text).toMatch(/^hookbox_sandbox_quarantined_tenants 0$/m);
    expect(text).toMatch(/^# TYPE hookbox_event_streams_open gauge$/m);
    // Every sample line is `name{labels} value` (the exposition format).
    for (const line of text
      .trim()
      .split("\n")
      .filter((l) => !l.startsWith("#")))
      expect(line).toMatch(/^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[\d.e+-]+$/);

    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer acme-key" } })).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    // An operator key is not a tenant's.
    expect((await admin().request("POST", "/v1/sessions", {})).status).toBe(401);
  });
});

describe("reloading the config", () => {
  it("SIGHUP adds a tenant and rotates a key while a paused run of another tenant goes on; a broken config is refused and the old one serves", async () => {
    const { body } = await acme().request("POST", "/v1/sessions", {});
    const started = await acme().request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "record both", step: true });
    const paused = await readEvents(server.url, "acme-key", started.body.runId, { stopWhen: (m) => m.event.type === "debugger.pause" });
    const pause = paused.messages.at(-1)!.event as { pauseId: string };

    const next = structuredClone(original);
    next.tenants[0].apiKeys = [{ sha256: sha("acme-key-2") }]; // rotated
    next.tenants.push({ ...structuredClone(original.tenants[0]), name: "globex", apiKeys: [{ sha256: sha("globex-key") }] });
    writeFileSync(fixture.config, JSON.stringify(next));
    server.child.kill("SIGHUP");
    await stderrLines("config reloaded (2 tenants: acme, globex)", 1);

    expect((await api(server.url, "globex-key").request("POST", "/v1/sessions", {})).status).toBe(201);
    expect((await acme().request("POST", "/v1/sessions", {})).status).toBe(401); // the old key is gone
    const client = api(server.url, "acme-key-2");
    expect(await client.request("POST", `/v1/runs/${started.body.runId}/continue`, { pauseId: pause.pauseId })).toMatchObject({
      status: 200,
    });
    const rest = await readEvents(server.url, "acme-key-2", started.body.runId, {
      lastEventId: paused.messages.at(-1)!.id!,
      onMessage: (m) => {
        if (m.event.type === "debugger.pause")
          void client.request("POST", `/v1/runs/${started.body.runId}/continue`, { pauseId: m.event.pauseId });
      },
    });
    expect(rest.messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed" });

    writeFileSync(fixture.config, JSON.stringify({ ...next, tenants: [{ ...next.tenants[0], model: "scripted:missing.json" }] }));
    server.child.kill("SIGHUP");
    await stderrLines("the new config was refused; the old one stays", 1);
    expect(server.stderr()).toContain("tenants[0].model: file missing.json does not exist");
    expect((await api(server.url, "globex-key").request("POST", "/v1/sessions", {})).status).toBe(201);
    expect((await client.request("POST", "/v1/sessions", {})).status).toBe(201);

    // The same over HTTP, with the operator's key only.
    expect((await client.request("POST", "/v1/admin/reload")).status).toBe(401);
    expect(await admin().request("POST", "/v1/admin/reload")).toMatchObject({ status: 400, body: { error: { code: "CONFIG" } } });
    writeFileSync(fixture.config, JSON.stringify(original));
    expect(await admin().request("POST", "/v1/admin/reload")).toMatchObject({ status: 200, body: { reloaded: true, tenants: ["acme"] } });
    expect((await acme().request("POST", "/v1/sessions", {})).status).toBe(201);
    expect((await api(server.url, "globex-key").request("POST", "/v1/sessions", {})).status).toBe(401);
  });
});

describe("event streams for browsers", () => {
  it("a finished run's stream answers 204 once nothing is left after Last-Event-ID", async () => {
    const { runId, messages } = await finishedRun();
    const last = messages.at(-1)!.id!;
    expect((await readEvents(server.url, "acme-key", runId, { lastEventId: last })).status).toBe(204);
    expect((await readEvents(server.url, "acme-key", runId, { lastEventId: String(Number(last) - 1) })).messages).toHaveLength(1);
  });

  it("a stream token reads one run's stream without the key, and nothing else; it expires and is never logged", async () => {
    const { runId, messages } = await finishedRun();
    const other = await finishedRun();
    const issued = await acme().request("POST", `/v1/runs/${runId}/stream-token`, {});
    expect(issued.status).toBe(201);
    const { token, url } = issued.body;
    expect(url).toBe(`/v1/runs/${runId}/events?token=${token}`);
    const read = await readEvents(server.url, undefined, runId, { query: `?token=${token}` });
    expect(read.messages.map((m) => m.event.seq)).toEqual(messages.map((m) => m.event.seq));
    expect((await readEvents(server.url, undefined, other.runId, { query: `?token=${token}` })).status).toBe(401);
    expect((await api(server.url, undefined).request("GET", `/v1/runs/${runId}?token=${token}`)).status).toBe(401);
    expect((await readEvents(server.url, undefined, runId, { query: `?token=${token.slice(0, -2)}xx` })).status).toBe(401);
    // Another tenant's run cannot get one.
    const unknownRun = await acme().request("POST", `/v1/runs/run_${"0".repeat(32)}/stream-token`, {});
    expect(unknownRun.status).toBe(404);

    const short = await acme().request("POST", `/v1/runs/${runId}/stream-token`, { ttlMs: 1000 });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const expired = await api(server.url, undefined).request("GET", `/v1/runs/${runId}/events?token=${short.body.token}`);
    expect(expired).toMatchObject({ status: 401, body: { error: { code: "UNAUTHORIZED" } } });
    expect(JSON.stringify(expired.body)).not.toContain(short.body.token);
    expect(server.stderr()).not.toContain(token);
    expect(server.stderr()).not.toContain(short.body.token);
  });

  it("CORS headers go to the configured origins only, and a preflight needs no key", async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/v1/sessions`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
      });
    const allowed = await preflight("https://app.example.com");
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(allowed.headers.get("access-control-allow-headers")).toContain("authorization");
    const refused = await preflight("https://evil.example");
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    const get = await fetch(`${server.url}/v1/sessions`, {
      headers: { origin: "https://app.example.com", authorization: "Bearer acme-key" },
    });
    expect(get.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    // An event stream is written to Node's response directly (src/server/sse.ts): it carries them too.
    const { runId } = await finishedRun();
    const stream = await fetch(`${server.url}/v1/runs/${runId}/events`, {
      headers: { origin: "https://app.example.com", authorization: "Bearer acme-key" },
    });
    expect(stream.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(stream.headers.get("content-type")).toBe("text/event-stream");
    expect(await stream.text()).toContain('"run-finished"');
  });
});

describe("GET /v1/sessions", () => {
  it("pages with limit and cursor, in creation order, without gaps or repeats", async () => {
    const client = api(server.url, "acme-key");
    for (let i = 0; i < 5; i++) await client.request("POST", "/v1/sessions", {});
    const all = (await client.request("GET", "/v1/sessions?limit=1000")).body.sessions.map((s: { id: string }) => s.id);
    const paged: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.request("GET", `/v1/sessions?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.sessions.length).toBeLessThanOrEqual(2);
      paged.push(...page.body.sessions.map((s: { id: string }) => s.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(all);
    expect(await client.request("GET", "/v1/sessions?cursor=bogus!")).toMatchObject({ status: 400, body: { error: { path: "cursor" } } });
  });
});
