import { describe, expect, it } from "vitest";
import { openStore, STORE_SCHEMA_VERSION } from "../../src/store/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { jsonLines, runCli } from "../helpers/cli.js";
import { copyBeforeEachTest, queryFile, resumeStepped, runArgs, runRows, twoHooksPolicy, type RunRows } from "./migration-fixtures.js";

/*
 * test/fixtures/store/schema9.db is a store written by hookbox at 29adb29 (store schema 9: events, hook_calls and
 * snapshots each a WITHOUT ROWID table keyed by run), then VACUUMed: `hookbox run --store ...` twice in session
 * sess_history with a policy of two hooks (beforeToolCall, afterToolCall; one inference with two lookup calls, then
 * an answer), and a `--step` run in sess_cut killed with SIGKILL at its first pause. Opened by this build, those rows
 * move into run_records (schema 10) and read as schema 9 kept them; new rows follow them.
 */

const copy = copyBeforeEachTest("schema9.db", twoHooksPolicy);

const query = <Row>(sql: string, ...params: (string | number)[]): Row[] => queryFile<Row>(copy.file, sql, ...params);

describe("a store written by schema 9 (events, hook_calls and snapshots keyed by run)", () => {
  it("migrates on open: every run's events, hook chain records, snapshots and turns, and the stored bytes, read as before", async () => {
    expect(query<{ user_version: number }>("PRAGMA user_version")[0].user_version).toBe(9);
    const before = runRows(copy.file);
    const [{ bytes }] = query<{ bytes: number }>("SELECT bytes FROM tenant_usage WHERE tenant = 'default'");
    const history = new Map<string, string>();
    expect([...before.values()].every((rows) => rows.events.length > 0 && rows.hookCalls.length > 0)).toBe(true);

    const store = (copy.store = openStore(copy.file));
    expect(query<{ user_version: number }>("PRAGMA user_version")[0].user_version).toBe(STORE_SCHEMA_VERSION);
    expect(query("SELECT name, type FROM sqlite_master WHERE name IN ('events', 'hook_calls', 'snapshots') ORDER BY name")).toEqual([
      { name: "events", type: "view" },
      { name: "hook_calls", type: "view" },
      { name: "snapshots", type: "view" },
    ]);
    const [cut] = await store.listRuns("sess_cut");
    for (const [runId, rows] of before) {
      const events = await store.listEventTexts(runId);
      // Opening marked the killed run interrupted: one more event after the ones it had.
      const kept = runId === cut.id ? events.slice(0, -1) : events;
      expect(kept.map((row) => ({ seq: row.seq, type: row.type, body: row.json }))).toEqual(rows.events);
      expect((await store.listHookCalls(runId)).map((call) => call.index)).toEqual(rows.hookCalls.map((row) => row.idx));
      expect((await store.listHookCalls(runId)).map((call) => JSON.stringify(call.decision))).toEqual(
        rows.hookCalls.map((row) => row.decision),
      );
      const infos = await store.listSnapshotInfos(runId);
      expect(infos.map((info) => [info.index, info.phase, info.lastSeq])).toEqual(
        rows.snapshots.map((row) => [row.idx, row.phase, row.last_seq]),
      );
      const latest = await store.latestSnapshotInfo(runId);
      expect(latest?.index).toBe(rows.snapshots.at(-1)?.idx);
      history.set(runId, await store.readTurnText(latest!.stored));
      expect(JSON.parse(history.get(runId)!)).toMatchObject({ blocks: expect.any(Array) });
    }
    const interrupted = (await store.listEventTexts(cut.id)).at(-1)!;
    expect(interrupted.type).toBe("run-interrupted");
    expect((await store.tenantUsage("default")).storedBytes).toBe(bytes + interrupted.json.length);
    // Every row moved: the same counts through the views as in the old tables.
    const counts = query<{ kind: number; n: number }>("SELECT kind, count(*) AS n FROM run_records GROUP BY kind ORDER BY kind");
    const sum = (pick: (rows: RunRows) => RunRows["events"]) => [...before.values()].reduce((total, rows) => total + pick(rows).length, 0);
    expect(counts).toEqual([
      { kind: 0, n: sum((rows) => rows.events) + 1 },
      { kind: 1, n: sum((rows) => rows.hookCalls) },
      { kind: 2, n: sum((rows) => rows.snapshots) },
    ]);
  });

  it("a run after the migration continues the session, and the interrupted run resumes: their records follow the migrated ones", async () => {
    const before = runRows(copy.file);
    const run = await runCli(runArgs({ dir: copy.dir, file: copy.file, session: "sess_history", prompt: "Once more." }));
    expect(run.code, run.stderr).toBe(0);
    const events = jsonLines(run.stdout) as HookboxEvent[];
    const resumed = await resumeStepped({ dir: copy.dir, file: copy.file, sessionId: "sess_cut" });
    const resumedEvents = jsonLines(resumed.stdout) as HookboxEvent[];
    expect(resumedEvents.at(-1), resumed.stderr).toMatchObject({ type: "run-finished", status: "completed" });

    const store = (copy.store = openStore(copy.file));
    const started = events.find((e) => e.type === "run-started");
    const runId = started!.type === "run-started" ? started!.runId : "";
    expect((await store.listEventTexts(runId)).map((row) => row.seq)).toEqual(events.map((e) => e.seq));
    const calls = await store.listHookCalls(runId);
    expect(calls.map((call) => call.index)).toEqual(calls.map((_, i) => i + 1));
    expect(calls.map((call) => call.hook).sort()).toEqual([
      "afterToolCall",
      "afterToolCall",
      "beforeFinish",
      "beforeRun",
      "beforeToolCall",
      "beforeToolCall",
    ]);
    // The new run's history is the session's: its turn holds the migrated runs' blocks first.
    const turn = JSON.parse(await store.readTurnText((await store.latestSnapshotInfo(runId))!.stored)) as { blocks: unknown[] };
    expect(turn.blocks.length).toBeGreaterThan(8);

    const [cut] = await store.listRuns("sess_cut");
    const old = before.get(cut.id)!;
    const cutCalls = await store.listHookCalls(cut.id);
    // The migrated records keep their indexes; the resumed run's come after them, one by one.
    expect(cutCalls.map((call) => call.index)).toEqual(cutCalls.map((_, i) => i + 1));
    expect(cutCalls.length).toBeGreaterThan(old.hookCalls.length);
    const cutEvents = await store.listEventTexts(cut.id);
    expect(cutEvents.map((row) => row.seq)).toEqual(cutEvents.map((_, i) => i + 1));
    const infos = await store.listSnapshotInfos(cut.id);
    expect(infos.map((info) => info.index)).toEqual(infos.map((_, i) => i + 1));
    expect(infos.at(-1)?.phase).toBe("final");
  });

  it("deleting a migrated session frees what its rows were charged and leaves no row of its runs", async () => {
    const [{ bytes }] = query<{ bytes: number }>("SELECT bytes FROM tenant_usage WHERE tenant = 'default'");
    const store = (copy.store = openStore(copy.file));
    // Keyed by the run's number since schema 11.
    const runNums = query<{ num: number }>("SELECT num FROM runs WHERE session_id = 'sess_history'").map((row) => row.num);
    expect(runNums.length).toBe(2);
    const deleted = await store.deleteSession("sess_history");
    expect(deleted.freedBytes).toBeGreaterThan(0);
    const interrupted = (await store.listEventTexts((await store.listRuns("sess_cut"))[0].id)).at(-1)!;
    expect((await store.tenantUsage("default")).storedBytes).toBe(bytes + interrupted.json.length - deleted.freedBytes);
    await store.close();
    for (const num of runNums) expect(query("SELECT kind FROM run_records WHERE run_num = ?", num)).toEqual([]);
  });
});
