import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore, STORE_SCHEMA_VERSION, type Store } from "../../src/store/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { jsonLines, runCli } from "../helpers/cli.js";
import { copyStoreFixture, lookupTools, queryFile, resumeStepped, runArgs, twoLookupsModel } from "./migration-fixtures.js";
import { usageDelta } from "../../src/store/usage.js";

/*
 * test/fixtures/store/schema8.db is a store written by hookbox at e5bbdd8 (store schema 8: the usage ledger a rowid
 * table with two indexes, all-time totals in usage_totals), then VACUUMed: `hookbox run --store ... --pricing
 * "*=1000,2000"` twice in session sess_history (one inference with two lookup calls, then an answer: 15 and 27 tokens),
 * and a `--step` run in sess_cut killed with SIGKILL at its first pause (after its first inference). Opened by this
 * build, the usage moves to schema 9 (all-time totals beside the tenant's stored bytes, a run's own usage on its
 * row, the ledger keyed by tenant and time) and reads as schema 8 kept it.
 */

const policy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: { afterToolCall(p) { return undefined; } } });
`;
let dir: string;
let file: string;
let store: Store | undefined;

beforeEach(() => {
  ({ dir, file } = copyStoreFixture("schema8.db", {
    "policy.ts": policy,
    "tools.mjs": lookupTools,
    "model.json": JSON.stringify(twoLookupsModel),
  }));
});

afterEach(async () => {
  await store?.close();
  store = undefined;
});

const query = <Row>(sql: string, ...params: (string | number)[]): Row[] => queryFile<Row>(file, sql, ...params);

type Spent = { inputTokens: number; outputTokens: number; costUsd: number };
const SPENT_BY_RUN = `SELECT run_id AS runId, sum(input_tokens) AS inputTokens, sum(output_tokens) AS outputTokens, sum(cost_usd) AS costUsd
  FROM usage_ledger GROUP BY run_id ORDER BY run_id`;
const LEDGER_SUMS = `SELECT count(*) AS rows, sum(runs) AS runs, sum(inferences) AS inferences, sum(input_tokens) AS inputTokens,
  sum(output_tokens) AS outputTokens, sum(cost_usd) AS costUsd, sum(tool_calls) AS toolCalls, sum(sandbox_cpu_ms) AS sandboxCpuMs
  FROM usage_ledger WHERE tenant = 'default' AND at_ms >= ?`;

describe("a store written by schema 8 (a rowid usage ledger with two indexes, usage_totals)", () => {
  it("migrates on open: all-time totals, a period's sums, each run's usage and the stored bytes read as before", async () => {
    const [totals] = query<Record<string, number>>(`SELECT runs, inferences, input_tokens AS inputTokens, output_tokens AS outputTokens,
      cost_usd AS costUsd, tool_calls AS toolCalls, sandbox_cpu_ms AS sandboxCpuMs FROM usage_totals WHERE tenant = 'default'`);
    const spentByRun = query<Spent & { runId: string }>(SPENT_BY_RUN);
    const times = query<{ at_ms: number }>("SELECT at_ms FROM usage_ledger ORDER BY rowid").map((row) => row.at_ms);
    const since = times[Math.floor(times.length / 2)];
    const [{ rows, ...period }] = query<Record<string, number>>(LEDGER_SUMS, since);
    const [{ bytes }] = query<{ bytes: number }>("SELECT bytes FROM tenant_usage WHERE tenant = 'default'");
    expect(totals).toMatchObject({ runs: 3, inferences: 5, inputTokens: 70, outputTokens: 29, toolCalls: 4 });
    expect(totals.costUsd).toBeGreaterThan(0);
    expect(spentByRun).toHaveLength(3);

    store = openStore(file);
    expect(query<{ user_version: number }>("PRAGMA user_version")[0].user_version).toBe(STORE_SCHEMA_VERSION);
    expect(await store.usageTotals("default", 0)).toEqual({ ...totals, tokens: totals.inputTokens + totals.outputTokens });
    expect(await store.usageTotals("default", since)).toEqual({ ...period, tokens: period.inputTokens + period.outputTokens });
    for (const { runId, ...spent } of spentByRun) expect(await store.runUsage(runId)).toEqual(spent);
    // Opening marked the killed run interrupted: one more event, charged as every event is.
    const [cut] = await store.listRuns("sess_cut");
    const interrupted = (await store.listEventTexts(cut.id)).at(-1)!;
    expect(interrupted.type).toBe("run-interrupted");
    expect((await store.tenantUsage("default")).storedBytes).toBe(bytes + interrupted.json.length);
    expect(await store.storedBytesByTenant()).toEqual(new Map([["default", bytes + interrupted.json.length]]));
    // Every row of the old ledger is kept, in its order; the old tables are gone.
    expect(query<{ rows: number }>(LEDGER_SUMS, 0)[0].rows).toBe(times.length);
    expect(query<{ at_ms: number }>("SELECT at_ms FROM usage_ledger ORDER BY seq DESC").map((row) => row.at_ms)).toEqual(times);
    expect(
      query("SELECT name FROM sqlite_master WHERE name IN ('usage_totals', 'usage_by_run', 'usage_by_tenant', 'usage_ledger_8')"),
    ).toEqual([]);
  });

  it("a run after the migration adds to the migrated totals, and each of its ledger rows names its event", async () => {
    const [before] = query<{ runs: number; input_tokens: number; tool_calls: number }>(
      "SELECT runs, input_tokens, tool_calls FROM usage_totals WHERE tenant = 'default'",
    );
    const run = await runCli(runArgs({ dir, file, session: "sess_history", prompt: "Once more." }));
    expect(run.code, run.stderr).toBe(0);
    const events = jsonLines(run.stdout) as HookboxEvent[];
    store = openStore(file);
    expect(await store.usageTotals("default", 0)).toMatchObject({
      runs: before.runs + 1,
      inputTokens: before.input_tokens + 30,
      toolCalls: before.tool_calls + 2,
    });
    const started = events.find((e) => e.type === "run-started");
    const runId = started!.type === "run-started" ? started!.runId : "";
    expect(await store.runUsage(runId)).toEqual({ inputTokens: 30, outputTokens: 12, costUsd: 0 });
    const ledger = query<{ seq: number }>("SELECT seq FROM usage_ledger WHERE run_id = ? ORDER BY seq", runId);
    expect(ledger.map((row) => row.seq)).toEqual(events.filter((e) => usageDelta(e)).map((e) => e.seq));
  });

  it("the run interrupted under schema 8 resumes with the tokens it had spent counted against its budget", async () => {
    // 15 tokens before the kill, 27 in the inference after it: 42, past a budget of 40 (27 alone is within it).
    const resumed = await resumeStepped({ dir, file, sessionId: "sess_cut", limits: { maxTokens: 40 } });
    const events = jsonLines(resumed.stdout) as HookboxEvent[];
    expect(events.at(-1), resumed.stderr).toMatchObject({ type: "run-finished", status: "failed", errorCode: "BUDGET" });
    expect((events.at(-1) as { reason?: string }).reason).toContain("42 tokens");
    store = openStore(file);
    const [run] = await store.listRuns("sess_cut");
    expect(await store.runUsage(run.id)).toMatchObject({ inputTokens: 30, outputTokens: 12 });
  });
});
