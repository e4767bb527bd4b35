import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { LazyRuntimes } from "../../src/server/lazy-runtimes.js";
import type { HookboxError } from "../../src/errors.js";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * `hookbox serve` listens before it builds its tenants' runtimes (docs/server.md, "Start-up"): a server with
 * 10,000 tenants answers at once, a tenant's first request builds its runtime ahead of the background queue,
 * and what /healthz says of the tenants follows the builds. The speed goal (/healthz within 5 s of starting) is
 * measured by `npm run bench` (serve_healthz_ms_*), not here.
 */

const TENANTS = 10_000;
const key = (i: number) => `key-${i}`;

function manyTenants(count: number): { config: string; store: string } {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-lazy-"));
  writeFileSync(
    join(dir, "policy.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({
  tools: [{ name: "lookup", description: "look up", parameters: { type: "object" }, handler: (args, ctx) => ({ session: ctx.sessionId, from: "sandbox" }) }],
});
`,
  );
  writeFileSync(
    join(dir, "model.json"),
    JSON.stringify({ steps: [{ toolCalls: [{ id: "c1", name: "lookup", args: {} }] }, { text: "looked up" }] }),
  );
  const tenants = Array.from({ length: count }, (_, i) => ({
    name: `t${i}`,
    apiKeys: [{ sha256: createHash("sha256").update(key(i)).digest("hex") }],
    scripts: ["policy.ts"],
    model: "scripted:model.json",
  }));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ tenants }));
  return { config: join(dir, "config.json"), store: join(dir, "store.db") };
}

async function health(server: ServeProcess) {
  const { status, body } = await api(server.url, undefined).request("GET", "/healthz");
  expect(status).toBe(200);
  return body as { ok: boolean; tenants: { configured: number; ready: number; building: number; failed: number } };
}

describe("serve start-up", () => {
  it("with 10,000 tenants, listens before building them; a tenant's first run builds its runtime ahead of the queue", async () => {
    const fixture = manyTenants(TENANTS);
    const server = await startServe(fixture);
    try {
      const first = await health(server);
      expect(first.ok).toBe(true);
      expect(first.tenants.configured).toBe(TENANTS);
      // At about 12 ms a tenant, building all of them takes minutes: the server answers long before.
      expect(first.tenants.ready).toBeLessThan(TENANTS);

      // The last tenant of the config, at the end of the background queue.
      const last = TENANTS - 1;
      const client = api(server.url, key(last));
      const { body: session } = await client.request("POST", "/v1/sessions", {});
      const { status, body: run } = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "go" });
      expect(status).toBe(202);
      const events = (await readEvents(server.url, key(last), run.runId)).messages.map((message) => message.event);
      const tool = events.find((event) => event.type === "tool-finished");
      expect(tool).toMatchObject({ type: "tool-finished", result: { session: session.sessionId, from: "sandbox" } });
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "looked up" });

      const later = await health(server);
      expect(later.tenants.ready).toBeGreaterThanOrEqual(1);
      expect(later.tenants.ready).toBeLessThan(TENANTS);
      expect(later.tenants.failed).toBe(0);
    } finally {
      expect((await server.stop()).code).toBe(0);
    }
  }, 120_000);

  it("a tenant whose script does not load is TENANT_UNAVAILABLE until retryAfterMs has passed; fixed on disk, it builds again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hookbox-lazy-retry-"));
    const script = join(dir, "policy.ts");
    writeFileSync(script, "export default {{ broken");
    writeFileSync(join(dir, "model.json"), JSON.stringify({ steps: [{ text: "hi" }] }));
    const pool = createSandboxPool({ workers: 1 });
    const failures: string[] = [];
    const runtimes = new LazyRuntimes({
      tenants: ["acme"],
      build: () =>
        createTenantRuntime(
          { name: "acme", scripts: [{ path: script }], model: { kind: "scripted", file: join(dir, "model.json") } },
          pool,
        ),
      onFailure: (tenant, error) => failures.push(`${tenant}: ${error.message}`),
      // Long enough that a loaded machine cannot pass it between the failed build and the next get().
      retryAfterMs: 2000,
    });
    try {
      const first = await runtimes.get("acme").catch((error: HookboxError) => error);
      expect(first).toMatchObject({ code: "TENANT_UNAVAILABLE", details: { tenant: "acme", retryAfterSeconds: 2 } });
      expect((first as HookboxError).message).toMatch(/^tenant acme is unavailable: it failed to load: .*policy\.ts/);
      expect(failures).toHaveLength(1);
      writeFileSync(script, `export default { hooks: { beforeToolCall() {} } };`);
      // Within retryAfterMs the failure stands, without a build (onFailure is told once per build).
      expect(await runtimes.get("acme").catch((error: HookboxError) => error.code)).toBe("TENANT_UNAVAILABLE");
      expect(failures).toHaveLength(1);
      expect(runtimes.status()).toEqual({ configured: 1, ready: 0, building: 0, failed: 1 });
      await new Promise((resolve) => setTimeout(resolve, 2050));
      const runtime = await runtimes.get("acme");
      expect(await runtime.start({ sessionId: "sess_lazy", prompt: "go" }).wait()).toMatchObject({ status: "completed", text: "hi" });
      expect(runtimes.status()).toEqual({ configured: 1, ready: 1, building: 0, failed: 0 });
      expect(await runtimes.get("acme")).toBe(runtime);
      await expect(runtimes.get("other")).rejects.toMatchObject({ code: "CONFIG" });
    } finally {
      await pool.close();
    }
  }, 60_000);

  it("a tenant the background builds is told built ahead, unless a request waited for that build", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hookbox-lazy-ahead-"));
    writeFileSync(join(dir, "policy.ts"), `export default { hooks: { beforeToolCall() {} } };`);
    writeFileSync(join(dir, "model.json"), JSON.stringify({ steps: [{ text: "hi" }] }));
    const pool = createSandboxPool({ workers: 1 });
    // Each build waits for the test to let it finish, so a request can come while the background builds "wanted".
    const gates = new Map<string, () => void>();
    const ahead: string[] = [];
    const runtimes = new LazyRuntimes({
      tenants: ["first", "wanted", "last"],
      build: async (name) => {
        await new Promise<void>((resolve) => gates.set(name, resolve));
        return createTenantRuntime(
          { name, scripts: [{ path: join(dir, "policy.ts") }], model: { kind: "scripted", file: join(dir, "model.json") } },
          pool,
        );
      },
      builtAhead: (tenant) => ahead.push(tenant),
    });
    const gateOf = async (name: string) => {
      while (!gates.has(name)) await new Promise((resolve) => setTimeout(resolve, 5));
      return gates.get(name)!;
    };
    try {
      runtimes.warmAll();
      (await gateOf("first"))();
      const releaseWanted = await gateOf("wanted");
      // A request for the tenant the background is building now: it waits for that build.
      const requested = runtimes.get("wanted");
      releaseWanted();
      await requested;
      (await gateOf("last"))();
      while (runtimes.status().ready < 3) await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setImmediate(resolve));
      expect(ahead).toEqual(["first", "last"]);
    } finally {
      runtimes.stop();
      await pool.close();
    }
  }, 60_000);

  it("a tenant that fails to load shows in /metrics and the log; fixed on disk, a reload builds it again while the others keep serving", async () => {
    const fixture = writeFixture(
      [
        { name: "acme", key: "acme-key", steps: twoToolSteps },
        { name: "broken", key: "broken-key", steps: [{ text: "fixed" }], scripts: { "broken.ts": "export default {{ not code" } },
      ],
      { server: { adminKeys: [{ sha256: createHash("sha256").update("admin-key").digest("hex") }] } },
    );
    const server = await startServe(fixture);
    const admin = api(server.url, "admin-key");
    const broken = api(server.url, "broken-key");
    const run = async (client: typeof broken, key: string) => {
      const { body: session } = await client.request("POST", "/v1/sessions", {});
      const started = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "go" });
      if (started.status !== 202) return started;
      const events = (await readEvents(server.url, key, started.body.runId)).messages.map((message) => message.event);
      return { status: started.status, body: events.at(-1) };
    };
    try {
      const refused = await run(broken, "broken-key");
      expect(refused).toMatchObject({ status: 503, body: { error: { code: "TENANT_UNAVAILABLE" } } });
      expect(refused.body.error.message).toMatch(/^tenant broken is unavailable: it failed to load: config <host>.*broken\.ts/);
      expect(await run(api(server.url, "acme-key"), "acme-key")).toMatchObject({
        status: 202,
        body: { type: "run-finished", status: "completed" },
      });
      const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer admin-key" } })).text();
      expect(metrics).toContain('hookbox_tenant_unavailable{tenant="broken"} 1');
      expect(metrics).not.toContain('hookbox_tenant_unavailable{tenant="acme"}');
      expect(metrics).toMatch(/hookbox_tenants\{state="failed"\} 1/);
      expect(server.stderr()).toContain("hookbox serve: tenant broken is unavailable");

      writeFileSync(join(fixture.dir, "broken.ts"), "export default { hooks: { beforeToolCall() {} } };");
      expect(await admin.request("POST", "/v1/admin/reload")).toMatchObject({
        status: 200,
        body: { reloaded: true, tenants: ["acme", "broken"] },
      });
      expect(await run(broken, "broken-key")).toMatchObject({
        status: 202,
        body: { type: "run-finished", status: "completed", text: "fixed" },
      });
      expect((await health(server)).tenants.failed).toBe(0);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it("builds every tenant while a run stays in flight and its stream open; a tenant built ahead holds no isolate until its first run", async () => {
    const asking = `import { defineScript } from "hookbox";
export default defineScript({ hooks: { beforeToolCall(p) { if (p.call.args.ask) return { action: "ask", reason: "record?" }; } } });
`;
    const askingSteps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1", ask: true } }] }, { text: "done" }];
    const others = Array.from({ length: 30 }, (_, i) => ({
      name: `t${i}`,
      key: `t${i}-key`,
      steps: [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] }, { text: `t${i} done` }],
      scripts: { "policy.ts": asking },
    }));
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: askingSteps, scripts: { "policy.ts": asking } }, ...others], {
      server: { adminKeys: [{ sha256: createHash("sha256").update("admin-key").digest("hex") }] },
    });
    const server = await startServe(fixture);
    const liveIsolates = async () => {
      const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer admin-key" } })).text();
      return Number(/^hookbox_sandbox_live_isolates (\d+)$/m.exec(metrics)![1]);
    };
    try {
      // A run that stays in flight (it waits for an approval) with its SSE stream held open all along.
      const acme = api(server.url, "acme-key");
      const { body: session } = await acme.request("POST", "/v1/sessions", {});
      const { body: started } = await acme.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "go" });
      const asked = await readEvents(server.url, "acme-key", started.runId, { stopWhen: (m) => m.event.type === "approval.requested" });
      const pauseId = (asked.messages.at(-1)!.event as { pauseId: string }).pauseId;
      const held = readEvents(server.url, "acme-key", started.runId);

      // The server is never idle meanwhile, yet the background keeps its share and builds every tenant.
      const deadline = performance.now() + 90_000;
      while ((await health(server)).tenants.ready < 31) {
        expect(performance.now()).toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // Only acme, which ran, holds an isolate: the 30 tenants built ahead of any request hold none.
      expect(await liveIsolates()).toBe(1);
      const t7 = api(server.url, "t7-key");
      const { body: other } = await t7.request("POST", "/v1/sessions", {});
      const { body: otherRun } = await t7.request("POST", `/v1/sessions/${other.sessionId}/runs`, { prompt: "go" });
      expect((await readEvents(server.url, "t7-key", otherRun.runId)).messages.at(-1)!.event).toMatchObject({
        type: "run-finished",
        status: "completed",
        text: "t7 done",
      });
      expect(await liveIsolates()).toBe(2);

      expect((await acme.request("POST", `/v1/runs/${started.runId}/approvals/${pauseId}`, { decision: "approve" })).status).toBe(200);
      expect((await held).messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed", text: "done" });
    } finally {
      await server.stop();
    }
  }, 150_000);
});
