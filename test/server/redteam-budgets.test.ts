import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, statSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { twoToolSteps, writeFixture } from "./fixture.js";
import { api, readEvents } from "./serve-process.js";
import { probeHealth, runToEnd, STALL_BOUND_MS, startMeteredServe, victimStillServed } from "./redteam-server.js";

/*
 * Attacks on a run's bytes, tool calls and the tenant's storage, through a real `hookbox serve`: each
 * attack fails cleanly with the budget's errorCode, the store stays bounded, and meanwhile the victim's
 * runs and /healthz keep answering without a long stall.
 */

const MiB = 1024 * 1024;
const bigTool = `import { defineScript } from "hookbox";
export default defineScript({
  name: "flood",
  tools: [{ name: "big", description: "returns args.bytes characters", parameters: { type: "object" },
    async handler(args) { return "x".repeat(args.bytes); } }],
});
`;
const calls = (count: number, name: string, args: Record<string, unknown>) =>
  Array.from({ length: count }, (_, i) => ({ id: `c${i}`, name, args: { ...args, id: `c${i}` } }));
const bloatingMiddleware = `import { defineScript } from "hookbox";
export default defineScript({
  name: "bloat",
  middleware: [async function bloat(turn, next) {
    const out = await next(turn);
    for (let i = 0; i < 20000; i++) out.blocks.push({ id: "b" + i, kind: "llm_text", payload: { text: "y".repeat(300) }, metadata: {} });
    return out;
  }],
});
`;

let server: Awaited<ReturnType<typeof startMeteredServe>>;
let fixture: ReturnType<typeof writeFixture>;

beforeAll(async () => {
  fixture = writeFixture([
    { name: "victim", key: "victim-key", steps: twoToolSteps },
    {
      name: "flood",
      key: "flood-key",
      steps: [{ toolCalls: calls(40, "big", { bytes: 8 * MiB - 64 }) }, { text: "never" }],
      scripts: { "flood.ts": bigTool },
    },
    {
      name: "hoarder",
      key: "hoarder-key",
      steps: [{ toolCalls: calls(40, "big", { bytes: 8 * MiB - 64 }) }, { text: "never" }],
      scripts: { "flood.ts": bigTool },
      limits: { maxToolResultBytes: 9 * MiB, maxTurnBytes: 512 * MiB, memoryMb: 128 },
    },
    {
      name: "packrat",
      key: "packrat-key",
      steps: [{ toolCalls: calls(40, "big", { bytes: 400_000 }) }, { text: "never" }],
      scripts: { "flood.ts": bigTool },
      limits: { maxStoreBytes: 3 * MiB },
    },
    { name: "greedy", key: "greedy-key", steps: [{ toolCalls: calls(20_000, "record", {}) }, { text: "never" }] },
    {
      name: "archivist",
      key: "archivist-key",
      steps: [{ toolCalls: calls(64, "big", { bytes: 200_000 }) }, { text: "archived" }],
      scripts: { "flood.ts": bigTool },
      limits: { maxRunBytes: 64 * MiB, maxTurnBytes: 32 * MiB },
    },
    { name: "bloater", key: "bloater-key", steps: [{ text: "hi" }], scripts: { "bloat.ts": bloatingMiddleware }, limits: { cpuMs: 5000 } },
    // No session fits in one byte; a session fits in 50,000 bytes, a run with a 100,000-character prompt does not.
    { name: "full", key: "full-key", steps: [{ text: "never" }], limits: { maxStoreBytes: 1 } },
    { name: "narrow", key: "narrow-key", steps: [{ text: "never" }], limits: { maxStoreBytes: 50_000 } },
  ]);
  server = await startMeteredServe({ config: fixture.config, store: fixture.store });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

function storedBytes(tenant: string): number {
  const db = new DatabaseSync(fixture.store, { readOnly: true });
  try {
    return (db.prepare("SELECT bytes FROM tenant_usage WHERE tenant = ?").get(tenant) as { bytes: number } | undefined)?.bytes ?? 0;
  } finally {
    db.close();
  }
}

function storeFileBytes(): number {
  return [fixture.store, `${fixture.store}-wal`].reduce((sum, file) => sum + (statSync(file, { throwIfNoEntry: false })?.size ?? 0), 0);
}

async function underAttack<T>(attack: () => Promise<T>): Promise<T> {
  await server.stallWindow();
  const probe = probeHealth(server.url);
  const [result] = await Promise.all([attack(), victimStillServed(server.url, "victim-key")]);
  const { failures, count } = await probe.stop();
  expect(failures).toBe(0);
  expect(count).toBeGreaterThan(0);
  expect((await server.stallWindow()).maxCpuMs).toBeLessThan(STALL_BOUND_MS);
  return result;
}

describe("hookbox serve under budget attacks", () => {
  it("40 tool calls returning 8 MiB each: the first result over the per-result budget fails the run", async () => {
    const { final, events } = await underAttack(() => runToEnd(server.url, "flood-key"));
    expect(final).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
    expect(final.reason).toMatch(/tool big returned \d+ bytes, over the per-result budget of 1048576/);
    expect(events.some((e) => e.type === "tool-finished" && e.result !== undefined)).toBe(false);
    expect(storedBytes("flood")).toBeLessThan(MiB);
  }, 60_000);

  it("the same results under a raised per-result budget stop at the run's byte budget, the store bounded", async () => {
    const before = storeFileBytes();
    const { final } = await underAttack(() => runToEnd(server.url, "hoarder-key"));
    expect(final).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
    expect(final.reason).toMatch(/over the run budget of 16777216/);
    // Budget (16 MiB) + the calls already in flight (4 in parallel, 8 MiB each), never the 320 MiB asked for.
    expect(storedBytes("hoarder")).toBeLessThan(64 * MiB);
    expect(storeFileBytes() - before).toBeLessThan(96 * MiB);
  }, 60_000);

  it("a tenant over its store quota: the run fails with STORE_QUOTA and the store keeps it within the quota", async () => {
    const { final } = await underAttack(() => runToEnd(server.url, "packrat-key"));
    expect(final).toMatchObject({ status: "failed", errorCode: "STORE_QUOTA" });
    expect(final.reason).toMatch(/tenant packrat is over its store quota/);
    // Only the run's small final event may go past the quota.
    expect(storedBytes("packrat")).toBeLessThan(3 * MiB + 2048);
    expect(storedBytes("packrat")).toBeLessThan(3 * MiB + 2048);
  }, 60_000);

  it("a new session or run that would take the tenant over its store quota is refused with 403 STORE_QUOTA, storing nothing", async () => {
    const full = await api(server.url, "full-key").request("POST", "/v1/sessions", {});
    expect(full).toMatchObject({ status: 403, body: { error: { code: "STORE_QUOTA" } } });
    expect(full.body.error.message).toMatch(/tenant full is over its store quota/);
    expect(storedBytes("full")).toBe(0);

    const narrow = api(server.url, "narrow-key");
    const session = await narrow.request("POST", "/v1/sessions", {});
    expect(session.status).toBe(201);
    const sessionBytes = storedBytes("narrow");
    expect(sessionBytes).toBeGreaterThan(0);
    const run = await narrow.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "p".repeat(100_000) });
    expect(run).toMatchObject({ status: 403, body: { error: { code: "STORE_QUOTA" } } });
    expect(storedBytes("narrow")).toBe(sessionBytes);
    expect((await narrow.request("GET", `/v1/sessions/${session.body.sessionId}`)).body).toMatchObject({ status: "idle" });
  }, 60_000);

  it("an inference asking for 20,000 tool calls runs none of them and fails with RUN_BUDGET", async () => {
    const { final, sessionId } = await underAttack(() => runToEnd(server.url, "greedy-key"));
    expect(final).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
    expect(final.reason).toMatch(/asked for 20000 tool calls in one inference, over the budget of 64; none of them ran/);
    expect(
      readFileSync(fixture.log, "utf8")
        .split("\n")
        .filter((line) => line.includes(sessionId)),
    ).toEqual([]);
  }, 60_000);

  it("a middleware returning a huge turn is checked once, fast, and stopped by the turn budget", async () => {
    const { final } = await underAttack(() => runToEnd(server.url, "bloater-key"));
    expect(final).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
    expect(final.reason).toMatch(/over the turn budget of 4194304/);
  }, 60_000);

  it("a huge stored run read back by six SSE readers and six session readers, page by page", async () => {
    const { final, runId, sessionId, events } = await runToEnd(server.url, "archivist-key");
    expect(final).toMatchObject({ status: "completed", text: "archived" });
    expect(storedBytes("archivist")).toBeGreaterThan(24 * MiB);
    const client = api(server.url, "archivist-key");
    const readers = await underAttack(() =>
      Promise.all([
        ...Array.from({ length: 6 }, () => readEvents(server.url, "archivist-key", runId)),
        ...Array.from({ length: 6 }, () => client.request("GET", `/v1/sessions/${sessionId}`)),
      ]),
    );
    for (const reader of readers.slice(0, 6) as Awaited<ReturnType<typeof readEvents>>[]) {
      expect(reader.messages.map((m) => m.event.seq)).toEqual(events.map((e) => e.seq));
    }
    for (const view of readers.slice(6) as Awaited<ReturnType<ReturnType<typeof api>["request"]>>[]) {
      expect(view.status).toBe(200);
      expect(view.body.runs).toEqual({ total: 1, offset: 0, limit: 20 });
      expect(view.body.turns[0].turn.blocks.length).toBeGreaterThan(64);
    }
  }, 120_000);
});
