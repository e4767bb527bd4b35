import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DatabaseSync } from "node:sqlite";
import { writeFixture } from "./fixture.js";
import { api, startServe, type ServeProcess } from "./serve-process.js";
import { runToEnd } from "./redteam-server.js";

/*
 * The store quota covers every row a run leaves behind, through a real `hookbox serve` and its SQLite file:
 * the hook chain records (an afterToolCall payload carries the whole tool result), the usage ledger, and
 * uploaded script versions, not only events, snapshots and tool results.
 */

const MiB = 1024 * 1024;
const QUOTA = 2 * MiB;
const hoardingScript = `import { defineScript } from "hookbox";
export default defineScript({
  name: "hoard",
  tools: [{ name: "big", description: "returns args.bytes characters", parameters: { type: "object" },
    async handler(args) { return "x".repeat(args.bytes); } }],
  hooks: { afterToolCall(p) { return undefined; } },
});
`;
const calls = (count: number, bytes: number) => Array.from({ length: count }, (_, i) => ({ id: `c${i}`, name: "big", args: { bytes } }));

let server: ServeProcess;
let fixture: ReturnType<typeof writeFixture>;

beforeAll(async () => {
  const tenant = (name: string, count: number, bytes: number, text: string) => ({
    name,
    key: `${name}-key`,
    steps: [{ toolCalls: calls(count, bytes) }, { text }],
    scripts: { [`${name}.ts`]: hoardingScript },
    limits: { maxStoreBytes: QUOTA },
  });
  // A run that fits in the quota (3 x 30 kB results), and one that cannot (30 x 100 kB).
  fixture = writeFixture([tenant("keeper", 3, 30_000, "kept"), tenant("hoarder", 30, 100_000, "never")]);
  server = await startServe({ config: fixture.config, store: fixture.store });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** The tenant's counter, and the text its rows actually hold in each table of the SQLite file. */
function storeState(tenant: string): { counted: number; tables: Record<string, number> } {
  const db = new DatabaseSync(fixture.store, { readOnly: true });
  try {
    const sum = (sql: string) => (db.prepare(sql).get(tenant) as { n: number | null }).n ?? 0;
    const runsOf = "SELECT r.id FROM runs r JOIN sessions s ON s.id = r.session_id WHERE s.tenant = ?";
    return {
      counted: sum("SELECT bytes AS n FROM tenant_usage WHERE tenant = ?"),
      tables: {
        events: sum(`SELECT sum(length(body)) AS n FROM events WHERE run_id IN (${runsOf})`),
        snapshots: sum(`SELECT sum(length(blocks) + coalesce(length(head), 0)) AS n FROM snapshots WHERE run_id IN (${runsOf})`),
        session_log: sum("SELECT sum(length(block)) AS n FROM session_log WHERE session_id IN (SELECT id FROM sessions WHERE tenant = ?)"),
        tool_results: sum(`SELECT sum(length(block)) AS n FROM tool_results WHERE run_id IN (${runsOf})`),
        hook_calls: sum(`SELECT sum(length(decision) + coalesce(length(payload), 0)) AS n FROM hook_calls WHERE run_id IN (${runsOf})`),
        script_versions: sum("SELECT sum(length(files)) AS n FROM script_versions WHERE tenant = ?"),
      },
    };
  } finally {
    db.close();
  }
}

const total = (tables: Record<string, number>) => Object.values(tables).reduce((a, b) => a + b, 0);

describe("the store quota counts hook chain records, ledger rows and script versions", () => {
  it("a tenant whose runs produce big afterToolCall payloads stays within its quota", async () => {
    const first = await runToEnd(server.url, "keeper-key");
    expect(first.final, JSON.stringify(first.final)).toMatchObject({ status: "completed", text: "kept" });
    let state = storeState("keeper");
    // Every afterToolCall chain kept its payload, the 30 kB result included, and the counter covers it.
    expect(state.tables.hook_calls).toBeGreaterThan(90_000);
    expect(total(state.tables)).toBeLessThanOrEqual(state.counted);

    const second = await runToEnd(server.url, "hoarder-key");
    expect(second.final, JSON.stringify(second.final)).toMatchObject({ status: "failed", errorCode: "STORE_QUOTA" });
    expect(second.final.reason).toMatch(/tenant hoarder is over its store quota/);
    state = storeState("hoarder");
    expect(state.tables.hook_calls).toBeGreaterThan(100_000);
    // Only the failed run's small final event may go past the quota.
    expect(state.counted).toBeLessThan(QUOTA + 2048);
    expect(total(state.tables)).toBeLessThanOrEqual(state.counted);
    expect(total(state.tables)).toBeLessThan(QUOTA + 2048);
  }, 60_000);

  it("an upload that would take the tenant over its quota is refused with STORE_QUOTA and stores nothing", async () => {
    const before = storeState("hoarder");
    // One byte of file more than the room left is enough; the room is far below the 1 MiB upload limit.
    const room = QUOTA - before.counted;
    expect(room).toBeLessThan(900_000);
    const upload = await api(server.url, "hoarder-key").request("POST", "/v1/scripts", {
      name: "late",
      entry: "index.ts",
      files: {
        "index.ts": `import { defineScript } from "hookbox";\n// ${"z".repeat(Math.max(room, 0) + 1)}\nexport default defineScript({ name: "late" });\n`,
      },
    });
    expect(upload).toMatchObject({ status: 403, body: { error: { code: "STORE_QUOTA" } } });
    expect(upload.body.error.message).toMatch(/tenant hoarder is over its store quota/);
    expect(storeState("hoarder")).toEqual(before);
  }, 60_000);
});
