import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore, STORE_SCHEMA_VERSION, type Store } from "../../src/store/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { jsonLines, runCli } from "../helpers/cli.js";
import { copyStoreFixture, queryFile, resumeStepped, runArgs } from "./migration-fixtures.js";

/*
 * test/fixtures/store/schema6.db is a store written by hookbox at bf91613 (store schema 6, where every snapshot
 * is a whole turn), then VACUUMed: `hookbox run --store` twice in session sess_history (a lookup tool call, then
 * an answer), a `--step` run in sess_cut killed with SIGKILL while paused (interrupted on the next open), and
 * `SessionManager.fork("sess_history", { sessionId: "sess_fork" })` (a fork then copied its starting turn).
 * Opened by this build it migrates to the log store and keeps working: every old record reads as it did, old
 * sessions continue, the interrupted run resumes, the fork starts from its turn.
 */

const policy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: { afterToolCall(p) { return undefined; } } });
`;
const tools = `export default [{ name: "lookup", description: "look up an order", parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  handler: (args) => ({ id: args.id, total: 120 }) }];
`;
const model = {
  steps: [
    { text: "Looking it up.", toolCalls: [{ id: "c1", name: "lookup", args: { id: "A17" } }], usage: { inputTokens: 10, outputTokens: 5 } },
    { text: "Order A17 totals 120.", usage: { inputTokens: 20, outputTokens: 7 } },
  ],
};

let dir: string;
let file: string;
let store: Store | undefined;

beforeEach(() => {
  ({ dir, file } = copyStoreFixture("schema6.db", { "policy.ts": policy, "tools.mjs": tools, "model.json": JSON.stringify(model) }));
});

afterEach(async () => {
  await store?.close();
  store = undefined;
});

/** The first column of a query's first row, as a number. */
function count(sql: string, ...params: string[]): number {
  return Number(Object.values(queryFile<object>(file, sql, ...params)[0] ?? {})[0] ?? 0);
}

describe("a store written by schema 6 (whole-turn snapshots)", () => {
  it("migrates on open and reads every session, run, event, snapshot and usage total as before", async () => {
    store = openStore(file);
    expect(count("PRAGMA user_version")).toBe(STORE_SCHEMA_VERSION);
    expect((await store.listSessions()).map((s) => s.id).sort()).toEqual(["sess_cut", "sess_fork", "sess_history"]);
    const runs = await store.listRuns("sess_history");
    expect(runs.map((r) => r.status)).toEqual(["completed", "completed"]);
    for (const run of runs) {
      const events = await store.listEvents(run.id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "Order A17 totals 120." });
      const snapshots = await store.listSnapshots(run.id);
      expect(snapshots.map((s) => s.phase)).toEqual([
        "pre_inference",
        "post_inference",
        "post_tools",
        "pre_inference",
        "post_inference",
        "final",
      ]);
    }
    // The second run's final turn holds both conversations: two user messages, two tool results.
    const final = (await store.latestSnapshot(runs[1].id))!.turn;
    expect(final.blocks.filter((b) => b.kind === "user").map((b) => b.payload.text)).toEqual([
      "What does order A17 total?",
      "And again, please.",
    ]);
    expect(JSON.parse((await store.latestSnapshotText(runs[1].id))!.turnJson)).toEqual(final);
    expect(await store.getRun((await store.listRuns("sess_cut"))[0].id)).toMatchObject({ status: "interrupted" });
    // All time is the running total made from the ledger by the migration; a period still sums the ledger.
    const allTime = await store.usageTotals("default", 0);
    expect(allTime).toMatchObject({ runs: 3, inferences: 5, inputTokens: 70, outputTokens: 29, toolCalls: 2 });
    expect(await store.usageTotals("default", 1)).toEqual(allTime);
    expect((await store.tenantUsage("default")).storedBytes).toBe(39216);
  });

  it("an old session goes on from its whole-turn history, copied into its log once; later runs add only their blocks", async () => {
    const third = await runCli(runArgs({ dir, file, session: "sess_history", prompt: "Once more." }));
    expect(third.code, third.stderr).toBe(0);
    expect(jsonLines(third.stdout).at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
    store = openStore(file);
    const runs = await store.listRuns("sess_history");
    const turn = (await store.latestSnapshot(runs[2].id))!.turn;
    expect(turn.blocks.filter((b) => b.kind === "user").map((b) => b.payload.text)).toEqual([
      "What does order A17 total?",
      "And again, please.",
      "Once more.",
    ]);
    const logAfterThird = count("SELECT count(*) FROM session_log WHERE session_id = ?", "sess_history");
    expect(logAfterThird).toBe(turn.blocks.length);
    await store.close();
    store = undefined;

    const fourth = await runCli(runArgs({ dir, file, session: "sess_history", prompt: "And the last time." }));
    expect(fourth.code, fourth.stderr).toBe(0);
    store = openStore(file);
    const grown = (await store.latestSnapshot((await store.listRuns("sess_history"))[3].id))!.turn;
    // Only the fourth run's own blocks joined the log: its user message, two answers, one call, one result.
    expect(grown.blocks.length - turn.blocks.length).toBe(5);
    expect(count("SELECT count(*) FROM session_log WHERE session_id = ?", "sess_history")).toBe(logAfterThird + 5);
    expect(grown.blocks.slice(0, turn.blocks.length)).toEqual(turn.blocks);
  });

  it("hookbox resume finishes the run interrupted under schema 6, from its whole-turn snapshot", async () => {
    // A step-mode run: each pause is answered with a continue line on stdin.
    const resumed = await resumeStepped({ dir, file, sessionId: "sess_cut" });
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = jsonLines(resumed.stdout) as HookboxEvent[];
    expect(events.some((e) => e.type === "tool-finished" && e.callId === "c1")).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "Order A17 totals 120." });
    store = openStore(file);
    const [run] = await store.listRuns("sess_cut");
    const stored = await store.listEvents(run.id);
    expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
    expect((await store.latestSnapshot(run.id))!.turn.blocks.map((b) => b.kind)).toEqual([
      "user",
      "llm_text",
      "tool_call",
      "tool_use",
      "llm_text",
    ]);
  });

  it("a fork made under schema 6 starts its first run from the turn it was forked with", async () => {
    const first = await runCli(runArgs({ dir, file, session: "sess_fork", prompt: "A question for the fork." }));
    expect(first.code, first.stderr).toBe(0);
    store = openStore(file);
    const [run] = await store.listRuns("sess_fork");
    const turn = (await store.latestSnapshot(run.id))!.turn;
    expect(turn.blocks.filter((b) => b.kind === "user").map((b) => b.payload.text)).toEqual([
      "What does order A17 total?",
      "And again, please.",
      "A question for the fork.",
    ]);
    // The source session is untouched.
    expect(await store.countRuns("sess_history")).toBe(2);
  });
});
