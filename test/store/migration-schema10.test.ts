import { describe, expect, it } from "vitest";
import { openStore, STORE_SCHEMA_VERSION } from "../../src/store/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { jsonLines, runCli } from "../helpers/cli.js";
import { copyBeforeEachTest, queryFile, resumeStepped, runArgs, runRows, twoHooksPolicy } from "./migration-fixtures.js";

/*
 * test/fixtures/store/schema10.db is a store written by hookbox at 43afe21 (store schema 10: run_records keyed by the
 * run's id), then VACUUMed: `hookbox run --store ...` twice in session sess_history with a policy of two hooks
 * (beforeToolCall, afterToolCall; one inference with two lookup calls, then an answer), and a `--step` run in
 * sess_cut killed with SIGKILL at its first pause. Opened by this build, its records are keyed by each run's number
 * (schema 11) and read as schema 10 kept them; new runs take the numbers after them.
 */

const copy = copyBeforeEachTest("schema10.db", twoHooksPolicy);

const query = <Row>(sql: string, ...params: (string | number)[]): Row[] => queryFile<Row>(copy.file, sql, ...params);
const runNums = () => query<{ id: string; num: number }>("SELECT id, num FROM runs ORDER BY num");

describe("a store written by schema 10 (run_records keyed by the run's id)", () => {
  it("migrates on open: each run gets a number, and its events, hook chain records and snapshots read as before", async () => {
    expect(query<{ user_version: number }>("PRAGMA user_version")[0].user_version).toBe(10);
    const before = runRows(copy.file);
    const [{ bytes }] = query<{ bytes: number }>("SELECT bytes FROM tenant_usage WHERE tenant = 'default'");
    expect(before.size).toBe(3);

    const store = (copy.store = openStore(copy.file));
    expect(query<{ user_version: number }>("PRAGMA user_version")[0].user_version).toBe(STORE_SCHEMA_VERSION);
    expect(
      query<{ name: string }>("SELECT name FROM pragma_index_info('run_records_by_run') ORDER BY seqno").map((row) => row.name),
    ).toEqual(["run_num", "seq", "idx", "kind"]);
    const nums = runNums();
    expect(new Set(nums.map((row) => row.num)).size).toBe(3);
    const [cut] = await store.listRuns("sess_cut");
    for (const [runId, rows] of before) {
      const events = await store.listEventTexts(runId);
      // Opening marked the killed run interrupted: one more event after the ones it had.
      const kept = runId === cut.id ? events.slice(0, -1) : events;
      expect(kept.map((row) => ({ seq: row.seq, type: row.type, body: row.json }))).toEqual(rows.events);
      const calls = await store.listHookCalls(runId);
      expect(calls.map((call) => [call.index, call.hook, JSON.stringify(call.decision)])).toEqual(
        rows.hookCalls.map((row) => [row.idx, row.hook, row.decision]),
      );
      const infos = await store.listSnapshotInfos(runId);
      expect(infos.map((info) => [info.index, info.phase, info.lastSeq])).toEqual(
        rows.snapshots.map((row) => [row.idx, row.phase, row.last_seq]),
      );
      expect(JSON.parse(await store.readTurnText((await store.latestSnapshotInfo(runId))!.stored))).toMatchObject({
        blocks: expect.any(Array),
      });
    }
    // The views show the same rows as before, plus the interrupted event, each run's under its own number.
    const after = runRows(copy.file);
    for (const [runId, rows] of before) {
      const now = after.get(runId)!;
      expect(runId === cut.id ? now.events.slice(0, -1) : now.events).toEqual(rows.events);
      expect(now.hookCalls).toEqual(rows.hookCalls);
      expect(now.snapshots).toEqual(rows.snapshots);
      const num = nums.find((row) => row.id === runId)!.num;
      expect(query<{ n: number }>("SELECT count(*) AS n FROM run_records WHERE run_num = ?", num)[0].n).toBe(
        now.events.length + now.hookCalls.length + now.snapshots.length,
      );
    }
    const interrupted = (await store.listEventTexts(cut.id)).at(-1)!;
    expect(interrupted.type).toBe("run-interrupted");
    expect((await store.tenantUsage("default")).storedBytes).toBe(bytes + interrupted.json.length);
  });

  it("a run after the migration takes the next number and continues the session; the interrupted run resumes under its own", async () => {
    // Opened once, so the store is at schema 11 when the CLI writes to it.
    await openStore(copy.file).close();
    const before = runNums();
    const run = await runCli(runArgs({ dir: copy.dir, file: copy.file, session: "sess_history", prompt: "Once more." }));
    expect(run.code, run.stderr).toBe(0);
    const events = jsonLines(run.stdout) as HookboxEvent[];
    const resumed = await resumeStepped({ dir: copy.dir, file: copy.file, sessionId: "sess_cut" });
    expect((jsonLines(resumed.stdout) as HookboxEvent[]).at(-1), resumed.stderr).toMatchObject({
      type: "run-finished",
      status: "completed",
    });

    const started = events.find((e) => e.type === "run-started");
    const runId = started!.type === "run-started" ? started!.runId : "";
    const nums = runNums();
    expect(nums.slice(0, 3)).toEqual(before);
    expect(nums[3]).toEqual({ id: runId, num: Math.max(...before.map((row) => row.num)) + 1 });

    const store = (copy.store = openStore(copy.file));
    expect((await store.listEventTexts(runId)).map((row) => row.seq)).toEqual(events.map((e) => e.seq));
    const calls = await store.listHookCalls(runId);
    expect(calls.map((call) => call.index)).toEqual(calls.map((_, i) => i + 1));
    const turn = JSON.parse(await store.readTurnText((await store.latestSnapshotInfo(runId))!.stored)) as { blocks: unknown[] };
    expect(turn.blocks.length).toBeGreaterThan(8);

    const [cut] = await store.listRuns("sess_cut");
    const cutCalls = await store.listHookCalls(cut.id);
    expect(cutCalls.map((call) => call.index)).toEqual(cutCalls.map((_, i) => i + 1));
    const cutEvents = await store.listEventTexts(cut.id);
    expect(cutEvents.map((row) => row.seq)).toEqual(cutEvents.map((_, i) => i + 1));
    expect(cutEvents.at(-1)?.type).toBe("run-finished");
    expect((await store.listSnapshotInfos(cut.id)).at(-1)?.phase).toBe("final");
    // Every record belongs to a run that exists.
    expect(query("SELECT x.rowid FROM run_records x LEFT JOIN runs r ON r.num = x.run_num WHERE r.id IS NULL")).toEqual([]);
  });

  it("deleting a migrated session frees what its rows were charged and leaves no record of its runs", async () => {
    const [{ bytes }] = query<{ bytes: number }>("SELECT bytes FROM tenant_usage WHERE tenant = 'default'");
    const store = (copy.store = openStore(copy.file));
    const deletedNums = query<{ num: number }>("SELECT num FROM runs WHERE session_id = 'sess_history'").map((row) => row.num);
    expect(deletedNums.length).toBe(2);
    const deleted = await store.deleteSession("sess_history");
    expect(deleted.freedBytes).toBeGreaterThan(0);
    const [cut] = await store.listRuns("sess_cut");
    const interrupted = (await store.listEventTexts(cut.id)).at(-1)!;
    expect((await store.tenantUsage("default")).storedBytes).toBe(bytes + interrupted.json.length - deleted.freedBytes);
    await store.close();
    for (const num of deletedNums) expect(query("SELECT kind FROM run_records WHERE run_num = ?", num)).toEqual([]);
    expect(query<{ n: number }>("SELECT count(*) AS n FROM events WHERE run_id = ?", cut.id)[0].n).toBeGreaterThan(0);
  });
});
