import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { twoToolSteps, writeFixture } from "./fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";

/*
 * The model's context over HTTP: a tenant's `context` in the serve config is its runs' default and ceiling, a
 * run or a session's defaults may ask for less, and a session past its budget keeps running with its trims in
 * the event stream.
 */

let server: ServeProcess;
let fixture: ReturnType<typeof writeFixture>;

beforeAll(async () => {
  fixture = writeFixture([
    { name: "acme", key: "acme-key", steps: twoToolSteps, extra: { context: { maxBytes: 20_000 } } },
    { name: "plain", key: "plain-key", steps: twoToolSteps },
  ]);
  server = await startServe({ config: fixture.config, store: fixture.store });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

async function runOnce(key: string, sessionId: string, body: object) {
  const started = await api(server.url, key).request("POST", `/v1/sessions/${sessionId}/runs`, body);
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const { messages } = await readEvents(server.url, key, started.body.runId);
  return messages.map((m) => m.event);
}

describe("the model's context over HTTP", () => {
  it("a session past the budget a run asks for keeps running, its trims in the event stream", async () => {
    const acme = api(server.url, "acme-key");
    const { body } = await acme.request("POST", "/v1/sessions", { defaults: { context: { maxBytes: 3_000 } } });
    let trims = 0;
    for (let run = 1; run <= 8; run++) {
      const events = await runOnce("acme-key", body.sessionId, { prompt: `question ${run}` });
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
      for (const event of events.filter((e) => e.type === "context-trimmed")) {
        trims++;
        expect(event).toMatchObject({ budgetBytes: 3_000, summarized: false });
      }
    }
    expect(trims).toBeGreaterThan(0);
    // The session's turn starts with the note that stands for what was left out.
    const view = await acme.request("GET", `/v1/sessions/${body.sessionId}`);
    expect(view.body.turns.at(-1).turn.blocks[0]).toMatchObject({ kind: "context", payload: { restart_type: "trimmed" } });
  }, 60_000);

  it("asking for more context than the tenant's, or for summaries without a guard model, is refused with the field's path", async () => {
    const acme = api(server.url, "acme-key");
    const { body } = await acme.request("POST", "/v1/sessions", {});
    const above = await acme.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "x", context: { maxBytes: 50_000 } });
    expect(above).toMatchObject({
      status: 400,
      body: {
        error: {
          code: "ABOVE_TENANT_LIMIT",
          path: "$.context.maxBytes",
          message: "$.context.maxBytes: 50000 is above the tenant's context.maxBytes of 20000",
        },
      },
    });
    const session = await acme.request("POST", "/v1/sessions", { defaults: { context: { maxBytes: 50_000 } } });
    expect(session).toMatchObject({ status: 400, body: { error: { code: "ABOVE_TENANT_LIMIT", path: "$.defaults.context.maxBytes" } } });
    const summary = await acme.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "x", context: { summarize: true } });
    expect(summary).toMatchObject({ status: 400, body: { error: { code: "VALIDATION", path: "$.context.summarize" } } });
    expect(summary.body.error.message).toMatch(/tenant acme has no guard model to summarize with/);
    const typo = await acme.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "x", context: { maxToken: 5 } });
    expect(typo).toMatchObject({ status: 400, body: { error: { code: "VALIDATION", path: "$.context" } } });
    // A tenant without a configured context has no ceiling of its own: a run may ask for a larger budget.
    const plain = api(server.url, "plain-key");
    const plainSession = await plain.request("POST", "/v1/sessions", {});
    const events = await runOnce("plain-key", plainSession.body.sessionId, { prompt: "x", context: { maxTokens: 500_000 } });
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  }, 60_000);
});
