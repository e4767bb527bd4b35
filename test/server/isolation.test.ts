import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, expect, it } from "vitest";
import { loadServerConfig } from "../../src/server/config.js";
import { twoToolSteps, writeFixture } from "./fixture.js";
import { descendants, waitUntil } from "./processes.js";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";

const policy = `export default { hooks: { beforeToolCall(p) { return { action: "proceed" }; } } };`;
const names = ["acme", "globex", "initech"];

/** Three tenants with a script each; `edit` changes the written config. */
function fixture(edit: (config: any) => void) {
  const written = writeFixture(
    names.map((name) => ({ name, key: `${name}-key`, steps: twoToolSteps, scripts: { [`${name}.ts`]: policy } })),
  );
  const config = JSON.parse(readFileSync(written.config, "utf8"));
  edit(config);
  writeFileSync(written.config, JSON.stringify(config));
  return written;
}

/** The serve process's sandbox workers: node processes running dist/sandbox-worker.js (not a launcher around one). */
function sandboxWorkers(serve: ServeProcess): number[] {
  return descendants(serve.child.pid!).filter((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return /node/.test(argv[0] ?? "") && argv.some((arg) => arg.endsWith("sandbox-worker.js"));
    } catch {
      return false; // exited meanwhile
    }
  });
}

let serve: ServeProcess | undefined;
afterEach(async () => {
  await serve?.stop();
  serve = undefined;
});

it("reads isolation per tenant and the eviction options of the server block", () => {
  const written = fixture((c) => {
    c.tenants[1].isolation = "process-per-tenant";
    c.server = { idleMs: 60000, maxLiveIsolates: 50 };
  });
  const config = loadServerConfig(written.config);
  expect(config.tenants.map((t) => t.config.isolation)).toEqual([undefined, "process-per-tenant", undefined]);
  expect(config).toMatchObject({ idleMs: 60000, maxLiveIsolates: 50 });
});

it("reads a cordon per tenant and maxTenantsPerWorker from the server block", () => {
  const written = fixture((c) => {
    c.tenants[0].cordon = "free";
    c.tenants[2].cordon = "paid";
    c.server = { maxTenantsPerWorker: 16 };
  });
  const config = loadServerConfig(written.config);
  expect(config.tenants.map((t) => t.config.cordon)).toEqual(["free", undefined, "paid"]);
  expect(config.maxTenantsPerWorker).toBe(16);
});

it.each([
  ["a cordon that is not a name", (c: any) => (c.tenants[1].cordon = "free tier"), /tenants\[1\]\.cordon: /],
  ["a zero maxTenantsPerWorker", (c: any) => (c.server = { maxTenantsPerWorker: 0 }), /server\.maxTenantsPerWorker: /],
  ["an unknown isolation", (c: any) => (c.tenants[2].isolation = "vm-per-tenant"), /tenants\[2\]\.isolation: /],
  ["a negative idleMs", (c: any) => (c.server = { idleMs: -1 }), /server\.idleMs: /],
  ["a zero maxLiveIsolates", (c: any) => (c.server = { maxLiveIsolates: 0 }), /server\.maxLiveIsolates: /],
])("names the field for %s", (_what, edit, message) => {
  expect(() => loadServerConfig(fixture(edit).config)).toThrowError(message);
});

/** One run of the tenant to its end: its hooks place it on a worker. */
async function runOnce(server: ServeProcess, name: string): Promise<void> {
  const client = api(server.url, `${name}-key`);
  const { body: session } = await client.request("POST", "/v1/sessions", {});
  const { body: run } = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "go" });
  const events = (await readEvents(server.url, `${name}-key`, run.runId)).messages.map((message) => message.event);
  expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
}

it("hookbox serve starts a worker process per process-per-tenant tenant; shared tenants share the pool's two", async () => {
  serve = await startServe(fixture((c) => (c.tenants[0].isolation = c.tenants[1].isolation = "process-per-tenant")));
  // A tenant built at start-up holds no isolate until it runs (docs/server.md, "Start-up"); once each has run,
  // acme and globex are alone in a process each, and initech is in a shared worker.
  for (const name of names) await runOnce(serve, name);
  await waitUntil(() => sandboxWorkers(serve!).length === 3, 10_000, "three sandbox workers");
  await serve.stop();
  serve = await startServe(fixture(() => undefined));
  await waitUntil(() => sandboxWorkers(serve!).length > 0, 10_000, "sandbox workers");
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(sandboxWorkers(serve).length).toBeLessThanOrEqual(2);
});
