import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { HookboxEvent } from "../../src/events/types.js";
import { usePgServer } from "../helpers/postgres.js";
import { twoToolSteps, writeFixture } from "./fixture.js";
import { api, readEvents, startServe, useServeProcesses, type Api } from "./serve-process.js";

/*
 * Deployments on many `hookbox serve` processes sharing one PostgreSQL database (docs/scale-out.md): a deployment
 * made through one node is what every node runs next, without a restart; a rollback too; and nodes that make a
 * tenant's first deployment at the same moment make one, not one each (no 500, one wins).
 */

const pg = usePgServer();
const servers = useServeProcesses();

const tenantNames = ["acme", "globex", "initech", "umbrella"];

async function nodes(count: number) {
  const url = await pg.createDatabase("hookbox_cluster");
  const fixture = writeFixture(
    tenantNames.map((name) => ({ name, key: `${name}-key`, steps: twoToolSteps })),
    { store: url, server: { leaseMs: 2000 } },
  );
  for (let i = 0; i < count; i++) servers.push(await startServe({ config: fixture.config }));
  return { fixture, servers: [...servers] };
}

/** A policy that denies the calls whose ids it lists, tagged so a decision names the version that made it. */
const policyFiles = (blocked: string[], tag: string) => ({
  "policy.ts": `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: { beforeToolCall(p) {
  if (${JSON.stringify(blocked)}.includes(String(p.call.args.id))) return { action: "deny", reason: "blocked by ${tag}" };
} } });
`,
});

type Decision = Extract<HookboxEvent, { type: "hook-decision" }>;

async function runToEnd(client: Api, url: string, key: string) {
  const { body: session } = await client.request("POST", "/v1/sessions", {});
  const started = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "record both" });
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const { messages } = await readEvents(url, key, started.body.runId);
  const events = messages.map((m) => m.event);
  expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  return { sessionId: session.sessionId as string, events };
}

const policyDecisions = (events: HookboxEvent[]) =>
  events
    .filter((e): e is Decision => e.type === "hook-decision" && e.script === "policy")
    .map((d) => [d.callId, d.decision.action, d.version])
    .sort(); // a run's two calls are made in parallel: their decisions come in either order

describe("deployments across hookbox serve processes on one PostgreSQL database", () => {
  it("a deployment or rollback made through one node is what the other node runs next, without a restart", async () => {
    const { fixture, servers } = await nodes(2);
    const [a, b] = servers;
    const [onA, onB] = [api(a.url, "acme-key"), api(b.url, "acme-key")];
    const executed = (sessionId: string) =>
      readFileSync(fixture.log, "utf8")
        .split("\n")
        .filter((line) => line.startsWith(`tool ${sessionId} `))
        .map((line) => line.split(" ")[2])
        .sort(); // a run's two calls are made in parallel, in either order
    // Before any deployment both run the config's scripts (none here): both tools run.
    const before = await runToEnd(onB, b.url, "acme-key");
    expect(executed(before.sessionId)).toEqual(["c1", "c2"]);
    expect(policyDecisions(before.events)).toEqual([]);

    // Versions uploaded through A are visible through B; a deployment made through B is current on A.
    expect(
      (await onA.request("POST", "/v1/scripts", { name: "policy", entry: "policy.ts", files: policyFiles(["c2"], "v1") })).status,
    ).toBe(201);
    expect(
      (await onA.request("POST", "/v1/scripts", { name: "policy", entry: "policy.ts", files: policyFiles(["c1"], "v2") })).status,
    ).toBe(201);
    expect((await onB.request("GET", "/v1/scripts/policy")).body.versions).toHaveLength(2);
    const d1 = await onA.request("PUT", "/v1/deployment", { scripts: [{ name: "policy", version: 1 }] });
    expect(d1, JSON.stringify(d1.body)).toMatchObject({ status: 200, body: { number: 2 } });
    expect((await onB.request("GET", "/v1/deployment")).body).toMatchObject({
      deploymentId: d1.body.deploymentId,
      scripts: [{ name: "policy", version: 1 }],
    });
    const underV1 = await runToEnd(onB, b.url, "acme-key");
    expect(policyDecisions(underV1.events)).toEqual([
      ["c1", "none", 1],
      ["c2", "deny", 1],
    ]);
    expect(executed(underV1.sessionId)).toEqual(["c1"]);

    const d2 = await onB.request("PUT", "/v1/deployment", { scripts: [{ name: "policy", version: 2 }] });
    expect(d2, JSON.stringify(d2.body)).toMatchObject({ status: 200, body: { number: 3 } });
    const underV2 = await runToEnd(onA, a.url, "acme-key");
    expect(policyDecisions(underV2.events)).toEqual([
      ["c1", "deny", 2],
      ["c2", "none", 2],
    ]);
    expect(executed(underV2.sessionId)).toEqual(["c2"]);

    // A rollback through A: B runs v1 again.
    const rolledBack = await onA.request("POST", "/v1/deployment/rollback");
    expect(rolledBack).toMatchObject({ status: 200, body: { number: 4, rollbackOf: d2.body.deploymentId } });
    const afterRollback = await runToEnd(onB, b.url, "acme-key");
    expect(policyDecisions(afterRollback.events)).toEqual([
      ["c1", "none", 1],
      ["c2", "deny", 1],
    ]);
    // One history, the same through both nodes.
    const history = (await onA.request("GET", "/v1/deployments")).body.deployments;
    expect(history.map((d: { number: number; scripts: unknown[] }) => [d.number, d.scripts])).toEqual([
      [1, []],
      [2, [{ name: "policy", version: 1 }]],
      [3, [{ name: "policy", version: 2 }]],
      [4, [{ name: "policy", version: 1 }]],
    ]);
    expect((await onB.request("GET", "/v1/deployments")).body.deployments).toEqual(history);
    // The other tenants saw none of it.
    expect((await api(b.url, "globex-key").request("GET", "/v1/deployments")).body.deployments).toHaveLength(1);
  }, 120_000);

  it("nodes that make a tenant's first deployment at the same moment make one: no 500, every node answers the same one", async () => {
    const { servers } = await nodes(3);
    // Each tenant's first use, on every node at once (several requests per node): the first deployment is made then.
    const answers = await Promise.all(
      tenantNames.flatMap((tenant) =>
        servers.flatMap((server) =>
          Array.from({ length: 3 }, async () => ({
            tenant,
            answer: await api(server.url, `${tenant}-key`).request("GET", "/v1/deployment"),
          })),
        ),
      ),
    );
    for (const { answer } of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    for (const tenant of tenantNames) {
      const ids = new Set(answers.filter((entry) => entry.tenant === tenant).map((entry) => entry.answer.body.deploymentId));
      expect(ids.size, `${tenant}'s first deployment: ${[...ids].join(", ")}`).toBe(1);
      const history = await api(servers[0].url, `${tenant}-key`).request("GET", "/v1/deployments");
      expect(history.body.deployments.map((d: { number: number; fromConfig: boolean }) => [d.number, d.fromConfig])).toEqual([[1, true]]);
    }
  }, 120_000);
});
