import { afterEach, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { runCli, jsonLines } from "../helpers/cli.js";
import { openStore, type Store } from "../../src/store/index.js";
import { event, run, session, turn } from "../store/helpers.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";

/*
 * `hookbox sessions --delete ID` and `--prune --config FILE` on a real SQLite file, through the real CLI: what
 * DELETE /v1/sessions/:id and a server's retention sweep delete, freeing the tenant's stored bytes; refusals name the
 * session and why (a running run, also one a server on the same file is running; forks; an unknown id).
 */

const DAY_MS = 24 * 60 * 60 * 1000;
let store: Store | undefined;
let server: ServeProcess | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
  await server?.stop();
  server = undefined;
});

/** A session with one finished run, started `ageMs` ago. */
async function finishedSession(into: Store, id: string, tenant: string, ageMs = 0): Promise<void> {
  const at = Date.now() - ageMs;
  await into.createSession({ ...session(id, tenant), createdMs: at });
  await into.createRun({ ...run(`r-${id}`, id), startedMs: at });
  await into.saveSnapshot(`r-${id}`, "final", turn(`t-${id}`, ["x".repeat(2000)]));
  await into.appendEvent(`r-${id}`, event(`r-${id}`, 1, { type: "run-finished", status: "completed", iterations: 1 }));
}

const storedBytes = async (file: string, tenant: string) => {
  const reader = openStore(file);
  try {
    return (await reader.tenantUsage(tenant)).storedBytes;
  } finally {
    await reader.close();
  }
};

describe("hookbox sessions --delete", () => {
  it("deletes sessions with their runs and frees their bytes; an unknown, busy or forked one is refused by name, exit 1", async () => {
    const { store: file } = writeFixture([{ name: "acme", key: "k", steps: twoToolSteps }]);
    store = openStore(file);
    for (const id of ["s1", "s2", "source"]) await finishedSession(store, id, "acme");
    await store.createSession(session("busy", "acme"));
    await store.createRun(run("r-busy", "busy")); // running, owned by this (live) process
    const stored = (await store.latestSnapshotInfo("r-source"))!.stored;
    if (!("layout" in stored)) throw new Error("expected a layout");
    await store.createSession({ ...session("fork", "acme"), forkedFrom: { sessionId: "source", runId: "r-source" }, base: stored.layout });
    await store.close();
    store = undefined;
    const before = await storedBytes(file, "acme");

    const deleted = await runCli(["sessions", "--store", file, "--delete", "s1", "--delete", "nope", "--delete", "s2", "--json"]);
    expect(deleted.code, deleted.stderr).toBe(1);
    const lines = jsonLines(deleted.stdout);
    expect(lines.map((line) => line.sessionId)).toEqual(["s1", "s2"]);
    expect(lines[0]).toMatchObject({ deleted: true, tenant: "acme" });
    expect(lines[0].freedBytes).toBeGreaterThan(2000);
    expect(deleted.stderr).toContain("hookbox sessions: NOT_FOUND: no session nope");
    expect(await storedBytes(file, "acme")).toBe(before - lines[0].freedBytes - lines[1].freedBytes);

    const refused = await runCli(["sessions", "--store", file, "--delete", "busy", "--delete", "source"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain("SESSION_BUSY: session busy has a running run (r-busy)");
    expect(refused.stderr).toContain("SESSION_FORKED: session source has forks that keep their history in it (fork)");

    const text = await runCli(["sessions", "--store", file, "--delete", "fork"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^deleted fork \(tenant acme, \d+ bytes freed\)\n$/);
    const listed = await runCli(["sessions", "--store", file, "--json"]);
    expect(
      jsonLines(listed.stdout)
        .map((line) => line.id)
        .sort(),
    ).toEqual(["busy", "source"]);
  });

  it("refuses a session whose run a server on the same file is running, naming the run; it goes once the run ends", async () => {
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }]);
    server = await startServe({ config: fixture.config, store: fixture.store });
    const client = api(server.url, "acme-key");
    const { body } = await client.request("POST", "/v1/sessions", {});
    const started = await client.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "record both", step: true });
    const paused = await readEvents(server.url, "acme-key", started.body.runId, { stopWhen: (m) => m.event.type === "debugger.pause" });

    const refused = await runCli(["sessions", "--store", fixture.store, "--delete", body.sessionId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`SESSION_BUSY: session ${body.sessionId} has a running run (${started.body.runId})`);
    expect((await client.request("GET", `/v1/sessions/${body.sessionId}`)).status).toBe(200);

    expect((await client.request("POST", `/v1/runs/${started.body.runId}/cancel`)).status).toBe(200);
    await readEvents(server.url, "acme-key", started.body.runId, { lastEventId: paused.messages.at(-1)!.id! });
    const deleted = await runCli(["sessions", "--store", fixture.store, "--delete", body.sessionId]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await client.request("GET", `/v1/sessions/${body.sessionId}`)).status).toBe(404);
    // The server's next run on a session deleted under it is a 404, never a 500.
    expect(await client.request("POST", `/v1/sessions/${body.sessionId}/runs`, { prompt: "again" })).toMatchObject({
      status: 404,
      body: { error: { code: "NOT_FOUND" } },
    });
  });
});

describe("hookbox sessions --prune --config", () => {
  it("deletes what the config's retention would: each tenant's sessions idle longer than its runsDays, no other", async () => {
    const fixture = writeFixture([
      { name: "acme", key: "a", steps: twoToolSteps, extra: { retention: { runsDays: 1 } } },
      { name: "globex", key: "g", steps: twoToolSteps },
    ]);
    store = openStore(fixture.store);
    await finishedSession(store, "acme-old", "acme", 2 * DAY_MS);
    await finishedSession(store, "acme-new", "acme", DAY_MS / 2);
    await finishedSession(store, "globex-old", "globex", 30 * DAY_MS);
    await store.close();
    store = undefined;
    const before = await storedBytes(fixture.store, "acme");

    const pruned = await runCli(["sessions", "--store", fixture.store, "--prune", "--config", fixture.config, "--json"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    const [summary] = jsonLines(pruned.stdout);
    expect(summary).toMatchObject({ deleted: 1, tenants: ["acme"] });
    expect(await storedBytes(fixture.store, "acme")).toBe(before - summary.freedBytes);
    const left = await runCli(["sessions", "--store", fixture.store, "--json"]);
    expect(
      jsonLines(left.stdout)
        .map((line) => line.id)
        .sort(),
    ).toEqual(["acme-new", "globex-old"]);

    const again = await runCli(["sessions", "--store", fixture.store, "--prune", "--config", fixture.config]);
    expect(again).toMatchObject({ code: 0, stdout: "pruned 0 sessions (0 bytes freed) by the retention of acme\n" });
  });

  it("says what is wrong with the flags or the config, exit 2, deleting nothing", async () => {
    const fixture = writeFixture([{ name: "acme", key: "a", steps: twoToolSteps, extra: { retention: { runsDays: 1 } } }]);
    store = openStore(fixture.store);
    await finishedSession(store, "old", "acme", 2 * DAY_MS);
    await store.close();
    store = undefined;
    const cases: [string[], string][] = [
      [["--prune"], "--prune needs --config FILE"],
      [["--delete", "old", "--prune", "--config", fixture.config], "--delete and --prune go one at a time"],
      [["--config", fixture.config], "--config is for --prune"],
      [["--prune", "--config", fixture.config, "--tenant", "acme"], "--tenant narrows the list only"],
    ];
    for (const [flags, message] of cases) {
      const result = await runCli(["sessions", "--store", fixture.store, ...flags]);
      expect(result.code, flags.join(" ")).toBe(2);
      expect(result.stderr).toContain(message);
    }
    const config = JSON.parse(readFileSync(fixture.config, "utf8"));
    config.tenants[0].retention = { runsDays: -1 };
    writeFileSync(fixture.config, JSON.stringify(config));
    const broken = await runCli(["sessions", "--store", fixture.store, "--prune", "--config", fixture.config]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain("retention.runsDays");
    expect(jsonLines((await runCli(["sessions", "--store", fixture.store, "--json"])).stdout).map((line) => line.id)).toEqual(["old"]);
  });
});
