import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { openStore, type Store } from "../../src/store/index.js";
import { APPLICATION_ID, MIGRATIONS } from "../../src/store/migrations.js";
import { run, session, tempDir, withCommittedView } from "./helpers.js";
import { allStores } from "./stores.js";

const stores = allStores;

const version = (tenant: string, name: string, text: string) => ({
  tenant,
  name,
  entry: "policy.ts",
  files: { "policy.ts": text },
  bundleHash: `hash-${text}`,
  warnings: [],
  createdMs: Date.now(),
});

describe.each(stores)("%s store: policy lifecycle tables", (_name, open) => {
  let store: Store;
  afterEach(async () => store?.close());

  it("numbers script versions per tenant and name from 1 and keeps them as stored", async () => {
    store = await open();
    expect((await store.createScriptVersion(version("acme", "policy", "a"))).version).toBe(1);
    expect((await store.createScriptVersion(version("acme", "policy", "b"))).version).toBe(2);
    expect((await store.createScriptVersion(version("acme", "other", "c"))).version).toBe(1);
    expect((await store.createScriptVersion(version("globex", "policy", "d"))).version).toBe(1);
    expect((await store.getScriptVersion("acme", "policy", 2))?.files).toEqual({ "policy.ts": "b" });
    expect(await store.getScriptVersion("globex", "policy", 2)).toBeUndefined();
    expect((await store.listScriptVersions("acme", "policy")).map((v) => v.bundleHash)).toEqual(["hash-a", "hash-b"]);
    // The tenant's scripts by name, each with its latest version; another tenant's are not among them.
    expect((await store.listScripts("acme")).map((x) => [x.name, x.latestVersion])).toEqual([
      ["other", 1],
      ["policy", 2],
    ]);
    expect((await store.listScripts("globex")).map((x) => [x.name, x.latestVersion])).toEqual([["policy", 1]]);
    expect(await store.listScripts("initech")).toEqual([]);
  });

  it("makes a tenant's first deployment once: onlyIfFirst stores nothing when the tenant has one, and returns its current one", async () => {
    store = await open();
    const first = (id: string) => ({ id, tenant: "acme", scripts: [], shadow: [], fromConfig: true, createdMs: 1 });
    // Made at once (as processes sharing the store do), one is stored and every caller gets it.
    const made = await Promise.all(["f1", "f2", "f3"].map((id) => store.createDeployment(first(id), { onlyIfFirst: true })));
    expect(new Set(made.map((d) => d.id)).size).toBe(1);
    expect((await store.listDeployments("acme")).map((d) => [d.id, d.number])).toEqual([[made[0].id, 1]]);
    // After a later deployment, a late first use gets that one, not the config's scripts again.
    const deployed = await store.createDeployment({ ...first("d2"), scripts: [{ name: "policy", version: 1 }], fromConfig: false });
    expect(await store.createDeployment(first("late"), { onlyIfFirst: true })).toMatchObject({ id: deployed.id, number: 2 });
    expect((await store.listDeployments("acme")).map((d) => d.id)).toEqual([made[0].id, "d2"]);
    // Another tenant's first is its own.
    expect(await store.createDeployment({ ...first("g1"), tenant: "globex" }, { onlyIfFirst: true })).toMatchObject({
      id: "g1",
      number: 1,
    });
  });

  it("reads a tenant's current deployment alone: its last by number, whatever the ids and times", async () => {
    store = await open();
    expect(await store.currentDeployment("acme")).toBeUndefined();
    const deploy = (id: string, tenant: string, createdMs: number) =>
      store.createDeployment({ id, tenant, scripts: [{ name: "policy", version: createdMs }], shadow: [], fromConfig: false, createdMs });
    await deploy("z1", "acme", 30);
    await deploy("g1", "globex", 5);
    await deploy("m2", "acme", 20);
    expect(await store.currentDeployment("acme")).toEqual((await store.listDeployments("acme")).at(-1));
    await deploy("a3", "acme", 10);
    expect(await store.currentDeployment("acme")).toMatchObject({ id: "a3", number: 3, scripts: [{ name: "policy", version: 10 }] });
    expect(await store.currentDeployment("globex")).toMatchObject({ id: "g1", number: 1 });
    expect(await store.currentDeployment("initech")).toBeUndefined();
  });

  it("reads a deployment written but not yet committed: the current one is the one issued last", async () => {
    store = await open();
    const deploy = (id: string) =>
      store.createDeployment({
        id,
        tenant: "acme",
        scripts: [{ name: "policy", version: 1 }],
        shadow: [],
        fromConfig: false,
        createdMs: 1,
      });
    await deploy("d1");
    // Not awaited: the write is queued for the next group commit when the read is made.
    const written = deploy("d2");
    expect(await store.currentDeployment("acme")).toMatchObject({ id: "d2", number: 2 });
    await written;
    // Once the write has settled, the next deployment write is seen the same way.
    const again = deploy("d3");
    expect(await store.currentDeployment("acme")).toMatchObject({ id: "d3", number: 3 });
    await again;
  });

  it("keeps each tenant's deployment history in order, and runs with the deployment they used", async () => {
    store = await open();
    const first = await store.createDeployment({ id: "d1", tenant: "acme", scripts: [], shadow: [], fromConfig: true, createdMs: 1 });
    const second = await store.createDeployment({
      id: "d2",
      tenant: "acme",
      scripts: [{ name: "policy", version: 1 }],
      shadow: [{ name: "policy", version: 2 }],
      fromConfig: false,
      previousId: "d1",
      createdMs: 2,
    });
    await store.createDeployment({ id: "g1", tenant: "globex", scripts: [], shadow: [], fromConfig: true, createdMs: 3 });
    expect([first.number, second.number]).toEqual([1, 2]);
    expect((await store.listDeployments("acme")).map((d) => d.id)).toEqual(["d1", "d2"]);
    expect(await store.getDeployment("globex", "d2")).toBeUndefined();
    expect(await store.getDeployment("acme", "d2")).toMatchObject({ previousId: "d1", fromConfig: false });

    await store.createSession(session("s1", "acme"));
    await store.createSession(session("s2", "globex"));
    const deployment = { id: "d2", scripts: [{ name: "policy", version: 1, bundleHash: "h" }], shadow: [] };
    await store.createRun({ ...run("r1", "s1"), deployment });
    await store.createRun(run("r2", "s2"));
    expect((await store.getRun("r1"))?.deployment).toEqual(deployment);
    expect((await store.findRuns({ deploymentId: "d2" })).map((r) => [r.id, r.tenant])).toEqual([["r1", "acme"]]);
    expect((await store.findRuns({ tenant: "globex" })).map((r) => r.id)).toEqual(["r2"]);
    expect((await store.findRuns({ sessionIds: ["s1", "s2"], sinceMs: 0 })).map((r) => r.id).sort()).toEqual(["r1", "r2"]);
    expect(await store.findRuns({ sinceMs: Date.now() + 60_000 })).toEqual([]);

    await store.recordHookCall({
      runId: "r1",
      callId: "c1",
      hook: "beforeToolCall",
      attempt: 1,
      shadow: false,
      verdict: "proceed",
      decision: {},
      payload: { x: 1 },
    });
    await store.recordHookCall({
      runId: "r1",
      callId: "c1",
      hook: "beforeToolCall",
      attempt: 1,
      shadow: true,
      verdict: "deny",
      decision: { action: "deny" },
    });
    const calls = await store.listHookCalls("r1");
    expect(calls.map((c) => [c.index, c.shadow, c.verdict, c.payload])).toEqual([
      [1, false, "proceed", { x: 1 }],
      [2, true, "deny", undefined],
    ]);
  });
});

describe("a store made by the previous schema", () => {
  it("opens, migrates and keeps its sessions and runs", async () => {
    const file = join(tempDir(), "old.db");
    const db = new DatabaseSync(file);
    db.exec(MIGRATIONS[0].sql);
    db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
    db.exec("PRAGMA user_version = 1");
    db.prepare("INSERT INTO sessions (id, tenant, tenant_config, defaults, created_ms) VALUES ('s1', 'acme', '{}', '{}', 1)").run();
    db.prepare(
      "INSERT INTO runs (id, session_id, inference_id, prompt, options, status, iterations, started_ms, last_seq) VALUES ('r1', 's1', 'i', 'old run', '{}', 'completed', 1, 5, 0)",
    ).run();
    db.close();

    const store = openStore(file);
    try {
      const old = await store.getRun("r1");
      expect(old).toMatchObject({ prompt: "old run", status: "completed" });
      expect(old?.deployment).toBeUndefined();
      expect((await store.findRuns({ tenant: "acme" })).map((r) => r.id)).toEqual(["r1"]);
      expect(await store.listHookCalls("r1")).toEqual([]);
      expect((await store.createScriptVersion(version("acme", "policy", "a"))).version).toBe(1);
    } finally {
      await store.close();
    }
    const reopened = new DatabaseSync(file);
    expect(reopened.prepare("PRAGMA user_version").get()?.user_version).toBe(MIGRATIONS.at(-1)!.version);
    reopened.close();
  });
});

describe("the SQLite store's current-deployment read", () => {
  it("does not commit other queued writes first (no queued run or session write can hold a deployment), while every other read does", () =>
    withCommittedView(async (store, committedSessions) => {
      await store.createDeployment({ id: "d1", tenant: "acme", scripts: [], shadow: [], fromConfig: true, createdMs: 1 });
      const created = store.createSession(session("s1"));
      expect(await store.currentDeployment("acme")).toMatchObject({ id: "d1" });
      // Still queued: the read left the session's write to the group commit.
      expect(committedSessions()).toBe(0);
      // A read of the sessions table commits it first, so it sees the write issued before it.
      expect(await store.getSession("s1")).toMatchObject({ id: "s1" });
      expect(committedSessions()).toBe(1);
      await created;
    }));
});
