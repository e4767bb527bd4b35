import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { writeFixture } from "./fixture.js";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/cli.js";
import { startPgServer, type PgServer } from "../helpers/postgres.js";

/*
 * Usage accounting and budgets through the real `hookbox serve`: totals come from the store, per tenant,
 * survive a restart; tenant budget limits are ceilings; a traceparent header sets the run's trace id.
 */

// A sandboxed hook that logs what its payload says about the trace and the budget.
const tracingScript = `
import { defineScript } from "hookbox";
export default defineScript({
  hooks: { beforeToolCall: (p) => { let x = 0; for (let i = 0; i < 20000; i++) x += i; console.log("trace " + p.traceId + " tokens " + p.budget.tokensUsed + " " + x); } },
});`;

const steps = [
  {
    toolCalls: [
      { id: "c1", name: "record", args: { id: "c1" } },
      { id: "c2", name: "record", args: { id: "c2" } },
    ],
    usage: { inputTokens: 1000, outputTokens: 200 },
  },
  { text: "recorded", usage: { inputTokens: 1500, outputTokens: 100 } },
];
// Pricing: 1000 in * 2 + 200 out * 10 = 0.004; then 1500 * 2 + 100 * 10 = 0.004; per run 0.008 USD.
const pricing = { scripted: { inputPerMTok: 2, outputPerMTok: 10 } };

// One server per store kind: a SQLite file, then a PostgreSQL database on a throwaway server.
let server: ServeProcess;
let fixture: ReturnType<typeof writeFixture>;
let store: string;
let pg: PgServer | undefined;

async function startOn(storeKind: "sqlite" | "postgres") {
  fixture = writeFixture([
    { name: "acme", key: "acme-key", steps, scripts: { "trace.ts": tracingScript }, extra: { pricing } },
    { name: "globex", key: "globex-key", steps },
    { name: "tight", key: "tight-key", steps, limits: { maxTokens: 1000 } },
  ]);
  pg = storeKind === "postgres" ? await startPgServer() : undefined;
  store = pg ? await pg.createDatabase("hookbox_usage") : fixture.store;
  server = await startServe({ config: fixture.config, store });
}

async function runToEnd(key: string, body: Record<string, unknown> = { prompt: "record" }, headers: Record<string, string> = {}) {
  const client = api(server.url, key);
  const { body: session } = await client.request("POST", "/v1/sessions", {});
  const started = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, body, headers);
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const { messages } = await readEvents(server.url, key, started.body.runId);
  return messages.map((m) => m.event);
}

describe.each(["sqlite", "postgres"] as const)("GET /v1/usage and budgets over HTTP (%s store)", (storeKind) => {
  beforeAll(() => startOn(storeKind), 120_000);
  afterAll(async () => {
    await server?.stop();
    await pg?.stop();
  });

  it("returns the caller's tenant totals since a time, from the store; other tenants are separate", async () => {
    const startedAt = new Date().toISOString();
    const events = await runToEnd("acme-key");
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
    await runToEnd("acme-key");

    const usage = await api(server.url, "acme-key").request("GET", `/v1/usage?since=${encodeURIComponent(startedAt)}`);
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({
      tenant: "acme",
      since: startedAt,
      runs: 2,
      inferences: 4,
      inputTokens: 5000,
      outputTokens: 600,
      tokens: 5600,
      toolCalls: 4,
    });
    expect(usage.body.costUsd).toBeCloseTo(0.016, 9);
    expect(usage.body.sandboxCpuMs).toBeGreaterThan(0);

    const globex = await api(server.url, "globex-key").request("GET", "/v1/usage");
    expect(globex.body).toMatchObject({ tenant: "globex", runs: 0, tokens: 0, costUsd: 0 });
    const later = await api(server.url, "acme-key").request("GET", `/v1/usage?since=${new Date(Date.now() + 60_000).toISOString()}`);
    expect(later.body).toMatchObject({ runs: 0, inferences: 0, tokens: 0 });
  });

  it("refuses a since that is not an ISO time with 400 naming the parameter", async () => {
    const bad = await api(server.url, "acme-key").request("GET", "/v1/usage?since=yesterday");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "VALIDATION" });
    expect(bad.body.error.message).toContain("since");
  });

  it("since has one grammar and one message: GET /v1/usage, POST /v1/replays and hookbox replay --since", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hookbox-since-"));
    const script = join(dir, "noop.ts");
    writeFileSync(script, `import { defineScript } from "hookbox";\nexport default defineScript({ hooks: {} });\n`);
    const client = api(server.url, "acme-key");
    for (const bad of ["yesterday", "2026-02-30", "2026-11-01T09:30", "11/01/2026"]) {
      const problem = `expected an ISO 8601 date or time such as 2026-11-01 or 2026-11-01T09:30:00Z (a time needs Z or an offset), got ${JSON.stringify(bad)}`;
      const usage = await client.request("GET", `/v1/usage?since=${encodeURIComponent(bad)}`);
      expect(usage.status, bad).toBe(400);
      expect(usage.body.error.message).toBe(`since: ${problem}`);
      const replays = await client.request("POST", "/v1/replays", { scripts: [{ name: "policy", version: 1 }], since: bad });
      expect(replays.status, bad).toBe(400);
      expect(replays.body.error.message).toContain(problem);
      const cli = await runCli(["replay", "--store", store, "--scripts", script, "--since", bad]);
      expect(cli.code, bad).toBe(2);
      expect(cli.stderr).toBe(`hookbox replay: USAGE: --since: ${problem}\n`);
    }
    // A date alone is midnight UTC, for all three.
    const usage = await client.request("GET", "/v1/usage?since=2026-11-01");
    expect(usage.body.since).toBe("2026-11-01T00:00:00.000Z");
    const replays = await client.request("POST", "/v1/replays", { scripts: [{ name: "policy", version: 1 }], since: "2026-11-01" });
    expect(JSON.stringify(replays.body)).not.toContain("since");
    const cli = await runCli(["replay", "--store", store, "--scripts", script, "--since", "2026-11-01"]);
    expect(cli.stderr).not.toContain("--since");
  });

  it("a tenant's maxTokens is the default and the ceiling: a run within it fails with BUDGET at it, one asking for more is refused", async () => {
    const events = await runToEnd("tight-key");
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "failed", errorCode: "BUDGET" });
    expect((events.at(-1) as { reason: string }).reason).toContain("maxTokens (1000)");

    const client = api(server.url, "tight-key");
    const { body: session } = await client.request("POST", "/v1/sessions", {});
    const above = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "record", maxTokens: 1_000_000 });
    expect(above.status).toBe(400);
    expect(above.body.error).toMatchObject({ code: "ABOVE_TENANT_LIMIT", path: "$.maxTokens" });
  });

  it("a traceparent header makes the run's trace id the caller's; a malformed one is ignored", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const events = await runToEnd("acme-key", { prompt: "record" }, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    const logs = events.filter((e) => e.type === "log").map((e) => (e as { message: string }).message);
    expect(logs[0]).toMatch(new RegExp(`^trace ${traceId} tokens 1200 `));

    const other = await runToEnd("acme-key", { prompt: "record" }, { traceparent: "not-a-traceparent" });
    const otherLog = other.find((e) => e.type === "log") as { message: string };
    expect(otherLog.message).toMatch(/^trace [0-9a-f]{32} /);
    expect(otherLog.message).not.toContain(traceId);
  });

  it("usage survives a restart of the server (the ledger is in the store)", async () => {
    const before = (await api(server.url, "acme-key").request("GET", "/v1/usage")).body;
    await server.stop();
    server = await startServe({ config: fixture.config, store });
    const after = (await api(server.url, "acme-key").request("GET", "/v1/usage")).body;
    expect(after).toEqual({ ...before, until: after.until });
    expect(after.runs).toBeGreaterThanOrEqual(2);
  });
});
