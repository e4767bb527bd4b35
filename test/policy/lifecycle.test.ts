import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { startPgServer, type PgServer } from "../helpers/postgres.js";

// One real `hookbox serve` per store kind (a SQLite file, then a PostgreSQL database on a throwaway server);
// scripts are uploaded over HTTP, deployed, shadowed and rolled back.
let server: ServeProcess;
let log: string;
let pg: PgServer | undefined;
const acme = () => api(server.url, "acme-key");
const globex = () => api(server.url, "globex-key");

/** A policy whose lib/rules.ts lists the call ids it denies. */
const policyFiles = (blocked: string[], tag: string) => ({
  "policy.ts": `import { defineScript } from "hookbox";
import { isBlocked } from "./lib/rules";

export default defineScript({
  name: "policy",
  hooks: {
    beforeToolCall(p) {
      if (isBlocked(String(p.call.args.id))) return { action: "deny", reason: "blocked by ${tag}" };
    },
  },
});
`,
  "lib/rules.ts": `const blocked: string[] = ${JSON.stringify(blocked)};\nexport function isBlocked(id: string): boolean {\n  return blocked.includes(id);\n}\n`,
});

async function startOn(storeKind: "sqlite" | "postgres") {
  const fixture = writeFixture([
    { name: "acme", key: "acme-key", steps: twoToolSteps },
    { name: "globex", key: "globex-key", steps: twoToolSteps },
  ]);
  log = fixture.log;
  pg = storeKind === "postgres" ? await startPgServer() : undefined;
  server = await startServe({ config: fixture.config, store: pg ? await pg.createDatabase("hookbox_policy") : fixture.store });
}

type Decision = Extract<HookboxEvent, { type: "hook-decision" }>;
// Sorted by call id: a run's two calls are made in parallel, so their decisions come in either order.
const decisions = (events: HookboxEvent[]) =>
  events
    .filter((e): e is Decision => e.type === "hook-decision" && e.script === "policy")
    .sort((a, b) => String(a.callId).localeCompare(String(b.callId)));

async function runToEnd(client = acme(), key = "acme-key", body: Record<string, unknown> = {}) {
  const { body: session } = await client.request("POST", "/v1/sessions", {});
  const started = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "record both", ...body });
  expect(started.status).toBe(202);
  const { messages } = await readEvents(server.url, key, started.body.runId);
  return { sessionId: session.sessionId as string, runId: started.body.runId as string, events: messages.map((m) => m.event) };
}

const executed = (sessionId: string) =>
  readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line.startsWith(`tool ${sessionId} `))
    .map((line) => line.split(" ")[2])
    .sort();

describe.each(["sqlite", "postgres"] as const)("script versions and deployments over HTTP (%s store)", (storeKind) => {
  beforeAll(() => startOn(storeKind), 120_000);
  afterAll(async () => {
    await server?.stop();
    await pg?.stop();
  });

  it("versions uploads, deploys them without a restart, keeps a paused run on its versions, and rolls back", async () => {
    const v1 = await acme().request("POST", "/v1/scripts", { name: "policy", entry: "policy.ts", files: policyFiles([], "v1") });
    expect(v1).toMatchObject({ status: 201, body: { name: "policy", version: 1, warnings: [] } });
    expect(v1.body.bundleHash).toMatch(/^[0-9a-f]{64}$/);
    const v2 = await acme().request("POST", "/v1/scripts", { name: "policy", entry: "policy.ts", files: policyFiles(["c2"], "v2") });
    expect(v2).toMatchObject({ status: 201, body: { version: 2 } });
    expect(v2.body.bundleHash).not.toBe(v1.body.bundleHash);
    const listed = await acme().request("GET", "/v1/scripts/policy");
    expect(listed.body.versions.map((v: { version: number; files: string[] }) => [v.version, v.files])).toEqual([
      [1, ["policy.ts", "lib/rules.ts"]],
      [2, ["policy.ts", "lib/rules.ts"]],
    ]);
    expect((await globex().request("GET", "/v1/scripts/policy")).status).toBe(404);
    const scripts = await acme().request("GET", "/v1/scripts");
    expect(scripts.body.scripts.map((x: { name: string; latestVersion: number }) => [x.name, x.latestVersion])).toEqual([["policy", 2]]);
    expect((await globex().request("GET", "/v1/scripts")).body).toEqual({ scripts: [] });

    const config = await acme().request("GET", "/v1/deployment");
    expect(config.body).toMatchObject({ number: 1, fromConfig: true, scripts: [] });
    const d1 = await acme().request("PUT", "/v1/deployment", { scripts: [{ name: "policy", version: 1 }] });
    expect(d1).toMatchObject({ status: 200, body: { number: 2 } });

    // A run paused after its first inference, before any beforeToolCall ran.
    const { body: pausedSession } = await acme().request("POST", "/v1/sessions", {});
    const paused = await acme().request("POST", `/v1/sessions/${pausedSession.sessionId}/runs`, { prompt: "record both", step: true });
    const before = await readEvents(server.url, "acme-key", paused.body.runId, { stopWhen: (m) => m.event.type === "debugger.pause" });
    const pause = before.messages.at(-1)!.event as Extract<HookboxEvent, { type: "debugger.pause" }>;

    const underV1 = await runToEnd();
    expect(executed(underV1.sessionId)).toEqual(["c1", "c2"]);
    expect(decisions(underV1.events).map((d) => [d.callId, d.decision.action, d.version, d.bundleHash])).toEqual([
      ["c1", "none", 1, v1.body.bundleHash],
      ["c2", "none", 1, v1.body.bundleHash],
    ]);

    const d2 = await acme().request("PUT", "/v1/deployment", { scripts: [{ name: "policy", version: 2 }] });
    expect(d2.status).toBe(200);
    const underV2 = await runToEnd();
    expect(executed(underV2.sessionId)).toEqual(["c1"]);
    const denied = decisions(underV2.events).find((d) => d.callId === "c2")!;
    expect(denied).toMatchObject({ decision: { action: "deny", reason: "blocked by v2" }, version: 2, bundleHash: v2.body.bundleHash });

    // The paused run started under v1 and finishes under v1.
    expect((await acme().request("POST", `/v1/runs/${paused.body.runId}/continue`, { pauseId: pause.pauseId })).status).toBe(200);
    const rest = await readEvents(server.url, "acme-key", paused.body.runId, {
      lastEventId: before.messages.at(-1)!.id!,
      onMessage: (m) => {
        if (m.event.type === "debugger.pause")
          void acme().request("POST", `/v1/runs/${paused.body.runId}/continue`, { pauseId: m.event.pauseId });
      },
    });
    expect(rest.messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed" });
    expect(executed(pausedSession.sessionId)).toEqual(["c1", "c2"]);
    expect(new Set(decisions(rest.messages.map((m) => m.event)).map((d) => d.version))).toEqual(new Set([1]));
    expect((await acme().request("GET", `/v1/runs/${paused.body.runId}`)).body.deployment).toMatchObject({
      id: d1.body.deploymentId,
      scripts: [{ name: "policy", version: 1, bundleHash: v1.body.bundleHash }],
    });

    const rolledBack = await acme().request("POST", "/v1/deployment/rollback");
    expect(rolledBack).toMatchObject({ status: 200, body: { rollbackOf: d2.body.deploymentId } });
    expect((await acme().request("GET", "/v1/deployment")).body).toMatchObject({ scripts: [{ name: "policy", version: 1 }] });
    const afterRollback = await runToEnd();
    expect(executed(afterRollback.sessionId)).toEqual(["c1", "c2"]);
    expect(new Set(decisions(afterRollback.events).map((d) => d.version))).toEqual(new Set([1]));

    const history = await acme().request("GET", "/v1/deployments");
    expect(history.body.deployments.map((d: { number: number; scripts: unknown[] }) => [d.number, d.scripts])).toEqual([
      [1, []],
      [2, [{ name: "policy", version: 1 }]],
      [3, [{ name: "policy", version: 2 }]],
      [4, [{ name: "policy", version: 1 }]],
    ]);
    // The other tenant sees none of it and still runs its config scripts.
    expect((await globex().request("GET", "/v1/deployments")).body.deployments).toHaveLength(1);
    expect((await globex().request("GET", `/v1/deployments/${d1.body.deploymentId}/shadow-report`)).status).toBe(404);
    const globexRun = await runToEnd(globex(), "globex-key");
    expect(executed(globexRun.sessionId)).toEqual(["c1", "c2"]);
  }, 120_000);

  it("returns diagnostics with file, line and column for a broken upload, and stores nothing", async () => {
    const broken = await acme().request("POST", "/v1/scripts", {
      name: "broken",
      entry: "policy.ts",
      files: {
        ...policyFiles([], "x"),
        "lib/rules.ts":
          "const blocked: string[] = [1];\nexport function isBlocked(id: string): boolean {\n  return blocked.includes(id);\n}\n",
      },
    });
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe("SCRIPT_INVALID");
    expect(broken.body.error.diagnostics[0]).toMatchObject({ file: "lib/rules.ts", line: 1, column: 28 });
    expect(broken.body.error.diagnostics[0].message).toContain("TS2322");
    const syntax = await acme().request("POST", "/v1/scripts", {
      name: "broken",
      entry: "policy.ts",
      files: { "policy.ts": "export default {" },
    });
    expect(syntax.body.error.diagnostics[0]).toMatchObject({ file: "policy.ts", line: 1 });
    const throwsAtLoad = await acme().request("POST", "/v1/scripts", {
      name: "broken",
      entry: "policy.ts",
      files: { "policy.ts": 'import { defineScript } from "hookbox";\nthrow new Error("no");\nexport default defineScript({});\n' },
    });
    expect(throwsAtLoad.body.error).toMatchObject({
      code: "SCRIPT_INVALID",
      diagnostics: [{ file: "policy.ts", message: expect.stringContaining("no") }],
    });
    expect((await acme().request("GET", "/v1/scripts/broken")).status).toBe(404);
  }, 120_000);

  it("refuses uploads that import ../x, an absolute path or a host module, and bad paths or sizes", async () => {
    for (const [spec, why] of [
      ["../x", "outside the uploaded files"],
      ["/etc/passwd", "absolute paths"],
      ["node:child_process", "Node built-in"],
    ]) {
      const refused = await acme().request("POST", "/v1/scripts", {
        name: "escape",
        entry: "policy.ts",
        files: { "policy.ts": `import x from ${JSON.stringify(spec)};\nconsole.log(x);\n` },
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.diagnostics[0]).toMatchObject({ file: "policy.ts", line: 1 });
      expect(refused.body.error.diagnostics[0].message).toContain(`import "${spec}" in policy.ts is refused`);
      expect(refused.body.error.diagnostics[0].message).toContain(why);
    }
    const climbing = await acme().request("POST", "/v1/scripts", { name: "escape", entry: "policy.ts", files: { "../policy.ts": "" } });
    expect(climbing.body.error.diagnostics[0]).toMatchObject({ file: "../policy.ts", message: expect.stringContaining("..") });
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}.ts`, ""]));
    expect(await acme().request("POST", "/v1/scripts", { name: "big", entry: "f0.ts", files: many })).toMatchObject({
      status: 413,
      body: { error: { code: "UPLOAD_TOO_LARGE", path: "$.files" } },
    });
    expect((await acme().request("POST", "/v1/scripts", { name: "../etc", entry: "a.ts", files: { "a.ts": "" } })).status).toBe(400);
    expect((await acme().request("GET", "/v1/scripts/escape")).status).toBe(404);
  }, 120_000);

  it("refuses a deployment of a version that does not exist, naming it, and keeps the current one", async () => {
    const current = (await globex().request("GET", "/v1/deployment")).body.deploymentId;
    const refused = await globex().request("PUT", "/v1/deployment", { scripts: [{ name: "policy", version: 1 }] });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: "DEPLOYMENT_INVALID", path: "$.scripts[0]" } } });
    expect((await globex().request("GET", "/v1/deployment")).body.deploymentId).toBe(current);
    expect((await globex().request("POST", "/v1/deployment/rollback")).status).toBe(409);
  }, 120_000);

  it("replays a version over the tenant's stored runs: POST /v1/replays", async () => {
    // After the first test: acme has runs under v1 (c1 and c2 proceed) and one under v2 (c2 denied).
    const strict = await acme().request("POST", "/v1/replays", { scripts: [{ name: "policy", version: 2 }] });
    expect(strict.status).toBe(200);
    const { changes, summary } = strict.body;
    expect(summary.changed).toEqual({ "proceed->deny": 3 });
    expect(summary.errors).toBe(0);
    expect(
      changes.every(
        (c: { callId: string; hook: string; decision: { reason: string } }) =>
          c.callId === "c2" && c.hook === "beforeToolCall" && c.decision.reason === "blocked by v2",
      ),
    ).toBe(true);
    const lenient = await acme().request("POST", "/v1/replays", { scripts: [{ name: "policy", version: 1 }] });
    expect(lenient.body.summary.changed).toEqual({ "deny->proceed": 1 });
    expect(lenient.body.summary.calls).toBe(summary.calls);
    const none = await acme().request("POST", "/v1/replays", { scripts: [{ name: "policy", version: 2 }], since: "2999-01-01T00:00:00Z" });
    expect(none.body.summary).toEqual({ runs: 0, calls: 0, same: 0, changed: {}, errors: 0 });
    // Another tenant's runs and versions are invisible.
    expect((await globex().request("POST", "/v1/replays", { scripts: [{ name: "policy", version: 2 }] })).status).toBe(400);
    expect(
      (await acme().request("POST", "/v1/replays", { scripts: [{ name: "policy", version: 1 }], sessionIds: ["not-ours"] })).body.summary
        .runs,
    ).toBe(0);
  }, 120_000);

  it("warns when defineScript names a script differently, and refuses a deployment whose scripts collide", async () => {
    const copy = await acme().request("POST", "/v1/scripts", { name: "policy-copy", entry: "policy.ts", files: policyFiles([], "copy") });
    expect(copy.status).toBe(201);
    expect(copy.body.warnings).toEqual([expect.stringContaining('defineScript names the script "policy"')]);
    const before = (await acme().request("GET", "/v1/deployment")).body.deploymentId;
    const refused = await acme().request("PUT", "/v1/deployment", {
      scripts: [
        { name: "policy", version: 1 },
        { name: "policy-copy", version: 1 },
      ],
    });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: "DEPLOYMENT_INVALID" } } });
    expect(refused.body.error.message).toContain('two scripts are named "policy"');
    expect((await acme().request("GET", "/v1/deployment")).body.deploymentId).toBe(before);
  }, 120_000);

  it("a hostile upload (a loop or a memory bomb at load) is refused by the throwaway sandbox; the server and runs go on", async () => {
    for (const [body, limit] of [
      ["for (;;) {}", "time limit"],
      ["const a: number[][] = []; for (;;) a.push(new Array(1e6).fill(1));", ""],
    ]) {
      const hostile = await acme().request("POST", "/v1/scripts", {
        name: "hostile",
        entry: "policy.ts",
        files: { "policy.ts": `import { defineScript } from "hookbox";\n${body}\nexport default defineScript({});\n` },
      });
      expect(hostile.status).toBe(400);
      expect(hostile.body.error.code).toBe("SCRIPT_INVALID");
      expect(hostile.body.error.diagnostics[0].message).toContain("load failed");
      expect(hostile.body.error.diagnostics[0].message).toContain(limit);
    }
    expect((await api(server.url, undefined).request("GET", "/healthz")).status).toBe(200);
    expect((await acme().request("GET", "/v1/scripts/hostile")).status).toBe(404);
    const after = await runToEnd();
    expect(after.events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  }, 120_000);
});
