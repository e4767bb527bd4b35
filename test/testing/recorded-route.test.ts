import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { openStore } from "../../src/store/index.js";
import { recordedCases } from "../../src/policy/recorded-cases.js";

/*
 * GET /v1/sessions/:id/cases against the real `hookbox serve`: a tenant's own served runs become a case file that
 * `hookbox test` runs as it is; it passes against the policy that decided them and fails against a version that
 * decides one call differently, naming that call. Another tenant's session is a 404 like any other.
 */

const policy = (denied: string) => `import { defineScript } from "hookbox";
export default defineScript({
  name: "policy",
  hooks: {
    beforeToolCall(p) {
      if (p.call.args.id === "${denied}") return { action: "deny", reason: "${denied} is not recorded" };
    },
  },
});
`;

let server: ServeProcess;
let dir: string;
let storeFile: string;
const acme = () => api(server.url, "acme-key");

beforeAll(async () => {
  const fixture = writeFixture([
    { name: "acme", key: "acme-key", steps: twoToolSteps, scripts: { "policy.ts": policy("c2") } },
    { name: "globex", key: "globex-key", steps: twoToolSteps },
  ]);
  dir = fixture.dir;
  storeFile = fixture.store;
  server = await startServe({ config: fixture.config, store: fixture.store });
}, 60_000);
afterAll(async () => server?.stop());

async function runInNewSession(key: string, prompts: string[]): Promise<{ sessionId: string; runIds: string[] }> {
  const client = api(server.url, key);
  const { sessionId } = (await client.request("POST", "/v1/sessions", {})).body;
  const runIds: string[] = [];
  for (const prompt of prompts) {
    const { runId } = (await client.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt })).body;
    const { messages } = await readEvents(server.url, key, runId);
    expect(messages.at(-1)?.event).toMatchObject({ type: "run-finished", status: "completed" });
    runIds.push(runId);
  }
  return { sessionId, runIds };
}

interface RecordedFile {
  script?: string;
  cases: { name: string; note: string; steps: { hook: string; input: { payload: { call?: { id: string } } }; expect: object }[] }[];
}

describe("GET /v1/sessions/:id/cases", () => {
  it("answers a served session as a case file that passes against its policy and fails against one deciding otherwise", async () => {
    const { sessionId, runIds } = await runInNewSession("acme-key", ["record both"]);
    const answer = await acme().request("GET", `/v1/sessions/${sessionId}/cases?script=policy.ts`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const file = answer.body as RecordedFile;
    expect(file.script).toBe("policy.ts");
    expect(file.cases.map((c) => c.name)).toEqual([`run 1 of session ${sessionId} (${runIds[0]})`]);
    expect(file.cases[0]!.note).toContain('prompt "record both"');
    // Its two calls are made in parallel, so recorded in the order their hooks ran: sorted here.
    const toolSteps = file.cases[0]!.steps.filter((step) => step.hook === "beforeToolCall").sort((a, b) =>
      String(a.input.payload.call?.id).localeCompare(String(b.input.payload.call?.id)),
    );
    expect(toolSteps.map((step) => [step.input.payload.call?.id, step.expect])).toEqual([
      ["c1", { verdict: "proceed" }],
      ["c2", { verdict: "deny", action: "deny" }],
    ]);
    expect(answer.headers.get("hookbox-recorded-runs")).toBe("1");
    expect(answer.headers.get("hookbox-recorded-calls")).toBe(String(file.cases[0]!.steps.length));
    expect(answer.headers.get("hookbox-recorded-truncated")).toBeNull();

    // Kept as it came (curl ... > served.cases.json), beside the policy: it passes.
    writeFileSync(join(dir, "served.cases.json"), JSON.stringify(answer.body));
    const passed = await runCli(["test", "served.cases.json"], { cwd: dir });
    expect(passed.stdout, passed.stderr).toContain("1 passed, 0 failed");
    expect(passed.code).toBe(0);

    // A version that lets c2 through and denies c1 instead fails on both calls, each named.
    writeFileSync(join(dir, "changed.ts"), policy("c1"));
    writeFileSync(join(dir, "changed.cases.json"), JSON.stringify({ ...answer.body, script: "changed.ts" }));
    const failed = await runCli(["test", "changed.cases.json"], { cwd: dir });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/step \d+ \(beforeToolCall, call c1 record \{"id":"c1"\}\):/);
    expect(failed.stdout).toMatch(/step \d+ \(beforeToolCall, call c2 record \{"id":"c2"\}\):/);
    expect(failed.stdout).toContain('verdict: expected "deny", got "proceed"');
    expect(failed.stdout).toContain("0 passed, 1 failed");
  }, 120_000);

  it("picks runs with ?runId=, numbered as the session's runs", async () => {
    const { sessionId, runIds } = await runInNewSession("acme-key", ["first", "second"]);
    const all = await acme().request("GET", `/v1/sessions/${sessionId}/cases`);
    expect((all.body as RecordedFile).cases.map((c) => c.name)).toEqual([
      `run 1 of session ${sessionId} (${runIds[0]})`,
      `run 2 of session ${sessionId} (${runIds[1]})`,
    ]);
    expect((all.body as RecordedFile).script).toBeUndefined();
    const second = await acme().request("GET", `/v1/sessions/${sessionId}/cases?runId=${runIds[1]}`);
    expect(second.status).toBe(200);
    expect((second.body as RecordedFile).cases.map((c) => c.name)).toEqual([`run 2 of session ${sessionId} (${runIds[1]})`]);
    expect(second.headers.get("hookbox-recorded-runs")).toBe("1");
  }, 60_000);

  it("refuses another tenant's session, an unknown one, a run of another session and a session with nothing recorded", async () => {
    const ours = await runInNewSession("acme-key", ["ours"]);
    const theirs = await runInNewSession("globex-key", ["theirs"]);
    const probe = await acme().request("GET", `/v1/sessions/${theirs.sessionId}/cases`);
    expect(probe.status).toBe(404);
    expect(probe.body.error).toEqual({ code: "NOT_FOUND", message: `no session ${theirs.sessionId}` });
    expect((await acme().request("GET", "/v1/sessions/sess_nope/cases")).status).toBe(404);
    const stranger = await acme().request("GET", `/v1/sessions/${ours.sessionId}/cases?runId=${theirs.runIds[0]}`);
    expect(stranger.status).toBe(400);
    expect(stranger.body.error).toMatchObject({ code: "VALIDATION", path: "runId" });
    expect(stranger.body.error.message).toContain(`has no run ${theirs.runIds[0]}`);
    const { sessionId: empty } = (await acme().request("POST", "/v1/sessions", {})).body;
    const nothing = await acme().request("GET", `/v1/sessions/${empty}/cases`);
    expect(nothing.status).toBe(404);
    expect(nothing.body.error.message).toContain("has no recorded hook calls");
    expect((await api(server.url, "wrong-key").request("GET", `/v1/sessions/${ours.sessionId}/cases`)).status).toBe(401);
  }, 60_000);

  it("stops at its bounds (runs, calls, payload bytes) and says it left some out", async () => {
    const { sessionId } = await runInNewSession("acme-key", ["one", "two"]);
    const store = openStore(storeFile);
    try {
      const whole = await recordedCases(store, sessionId);
      expect(whole).toMatchObject({ runs: 2, truncated: false });
      const perRun = whole.calls / 2;
      expect(await recordedCases(store, sessionId, { bounds: { maxRuns: 1, maxCalls: 1000 } })).toMatchObject({
        runs: 1,
        calls: perRun,
        truncated: true,
      });
      expect(await recordedCases(store, sessionId, { bounds: { maxRuns: 10, maxCalls: perRun + 1 } })).toMatchObject({
        runs: 2,
        calls: perRun + 1,
        truncated: true,
      });
      // A byte bound smaller than any payload still keeps the first call, and nothing after it.
      expect(await recordedCases(store, sessionId, { bounds: { maxRuns: 10, maxCalls: 1000, maxPayloadBytes: 1 } })).toMatchObject({
        runs: 1,
        calls: 1,
        truncated: true,
      });
    } finally {
      await store.close();
    }
  }, 60_000);
});
