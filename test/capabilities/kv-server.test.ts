import { afterAll, afterEach, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { writeFixture } from "../server/fixture.js";
import { startPgServer, type PgServer } from "../helpers/postgres.js";

/*
 * ctx.kv through the real server: entries survive the serve process being killed and restarted on the same
 * store, are shared by one tenant's runs and sessions, are invisible to another tenant, and the quota and
 * the value bound hold.
 */

const memo = `import { defineScript } from "hookbox";
export default defineScript({
  name: "memo",
  hooks: {
    async beforeToolCall(p) {
      const mode = p.userContext?.originalUserRequest;
      if (mode === "fill") {
        let stored = 0;
        try {
          for (;;) { await p.kv.set("fill:" + stored, "x".repeat(400)); stored++; }
        } catch (e) {
          console.log(JSON.stringify({ stored, code: (e as any).code, message: (e as Error).message }));
        }
        return undefined;
      }
      if (mode === "huge") {
        try { await p.kv.set("huge", "x".repeat(70000)); } catch (e) { console.log(JSON.stringify({ code: (e as any).code, message: (e as Error).message })); }
        return undefined;
      }
      const visits = (((await p.kv.get("visits")) as number | null) ?? 0) + 1;
      await p.kv.set("visits", visits);
      // The keys are listed before this run's short-lived entry is set: the last run's one is gone by now (a
      // whole run later), where one set just before the list could still be there within the same millisecond.
      const keys = (await p.kv.list()).keys;
      await p.kv.set("temp", 1, { ttlMs: 1 });
      console.log(JSON.stringify({ visits, keys, missing: await p.kv.get("nope") }));
      return undefined;
    },
  },
});
`;

const steps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] }, { text: "done" }];

let server: ServeProcess | undefined;
afterEach(async () => {
  await server?.stop("SIGKILL");
  server = undefined;
});

// The kv entries live in the store: a SQLite file, or a PostgreSQL database on a throwaway server (started once).
let pg: Promise<PgServer> | undefined;
afterAll(async () => {
  await (await pg)?.stop();
});
async function storeFor(storeKind: "sqlite" | "postgres", fixture: { store: string }): Promise<string> {
  if (storeKind === "sqlite") return fixture.store;
  pg ??= startPgServer();
  return (await pg).createDatabase("hookbox_kv");
}

async function runOnce(url: string, key: string, prompt: string): Promise<Record<string, any>> {
  const client = api(url, key);
  const session = await client.request("POST", "/v1/sessions", {});
  const started = await client.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt });
  expect(started.status).toBe(202);
  const { messages } = await readEvents(url, key, started.body.runId);
  const events = messages.map((m) => m.event as unknown as Record<string, any>);
  expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  const log = events.find((e) => e.type === "log");
  expect(log, JSON.stringify(events)).toBeDefined();
  return JSON.parse(log!.message);
}

describe.each(["sqlite", "postgres"] as const)("ctx.kv through the real server (%s store)", (storeKind) => {
  it("persists across a killed and restarted serve process, shared by a tenant's runs, invisible to another tenant; quota and value bound hold", async () => {
    const fixture = writeFixture([
      { name: "acme", key: "acme-key", steps, scripts: { "memo.ts": memo } },
      { name: "globex", key: "globex-key", steps, scripts: { "memo.ts": memo } },
    ]);
    const config = JSON.parse(readFileSync(fixture.config, "utf8"));
    config.tenants[0].kv = { quotaBytes: 4096 };
    writeFileSync(fixture.config, JSON.stringify(config));

    const store = await storeFor(storeKind, fixture);
    server = await startServe({ config: fixture.config, store });
    expect(await runOnce(server.url, "acme-key", "count")).toEqual({ visits: 1, keys: ["visits"], missing: null });
    expect(await runOnce(server.url, "acme-key", "count")).toEqual({ visits: 2, keys: ["visits"], missing: null });
    // Another tenant, same key name: its own entry.
    expect((await runOnce(server.url, "globex-key", "count")).visits).toBe(1);

    await server.stop("SIGKILL");
    server = await startServe({ config: fixture.config, store });
    expect((await runOnce(server.url, "acme-key", "count")).visits).toBe(3);
    expect((await runOnce(server.url, "globex-key", "count")).visits).toBe(2);

    const filled = await runOnce(server.url, "acme-key", "fill");
    // 4096 bytes: "visits" (~70) plus entries of ~475 bytes each.
    expect(filled.stored).toBeGreaterThan(5);
    expect(filled.stored).toBeLessThan(9);
    expect(filled.code).toBe("CAPABILITY_QUOTA");
    expect(filled.message).toContain("4096-byte kv quota");
    const huge = await runOnce(server.url, "acme-key", "huge");
    expect(huge.code).toBe("CAPABILITY_QUOTA");
    expect(huge.message).toContain("over the 65536-byte limit");
    // The quota is per tenant: globex still writes.
    expect((await runOnce(server.url, "globex-key", "count")).visits).toBe(3);
  });

  it("a tenant with kv: false is denied", async () => {
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps, scripts: { "memo.ts": memo } }]);
    const config = JSON.parse(readFileSync(fixture.config, "utf8"));
    config.tenants[0].kv = false;
    writeFileSync(fixture.config, JSON.stringify(config));
    server = await startServe({ config: fixture.config, store: await storeFor(storeKind, fixture) });
    const client = api(server.url, "acme-key");
    const session = await client.request("POST", "/v1/sessions", {});
    const started = await client.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "count" });
    const { messages } = await readEvents(server.url, "acme-key", started.body.runId);
    const capability = messages.map((m) => m.event as unknown as Record<string, any>).find((e) => e.type === "capability");
    expect(capability).toMatchObject({ kind: "kv", op: "get", ok: false, errorCode: "CAPABILITY_DENIED" });
    const decision = messages
      .map((m) => m.event as unknown as Record<string, any>)
      .find((e) => e.type === "hook-decision" && e.script === "memo");
    expect(JSON.stringify(decision)).toContain("[CAPABILITY_DENIED]");
  });
});
