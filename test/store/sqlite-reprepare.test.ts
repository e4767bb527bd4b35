import { afterEach, describe, expect, it, vi } from "vitest";
import { constants, DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { openStore, type Store } from "../../src/store/index.js";
import { event, run, session, tempDir, turn } from "./helpers.js";

/*
 * SQLite compiles a prepared statement again, at every execution, when its plan may depend on a bound value
 * (`LIMIT ?`; since SQLite 3.54, `column = ?` serving an ORDER BY, a min/max or a join): that costs several times
 * the statement itself. The store writes such parameters `+?` (src/store/sqlite-statements.ts). SQLite calls the
 * authorizer while it compiles, so a count of its calls tells whether a statement was compiled again.
 */

interface Prepared {
  sql: string;
  statement: { all(...params: unknown[]): unknown[] };
  db: DatabaseSync;
}

/** A SQLite file store and every statement it prepared while opening, each with its connection. */
function openWatchedStore(): { store: Store; prepared: Prepared[] } {
  const prepare = vi.spyOn(DatabaseSync.prototype, "prepare");
  try {
    const store = openStore(join(tempDir(), "store.db"));
    const prepared = prepare.mock.calls.map(([sql], i) => ({
      sql,
      statement: prepare.mock.results[i].value as Prepared["statement"],
      db: prepare.mock.contexts[i] as DatabaseSync,
    }));
    return { store, prepared };
  } finally {
    prepare.mockRestore();
  }
}

/**
 * Counts the compilations on `db` from now on (setting an authorizer makes SQLite compile each statement once more).
 * Transaction control (BEGIN, COMMIT, savepoints) is left out: the store runs it as text, compiled each time, at a cost
 * of well under a microsecond.
 */
function countCompiles(db: DatabaseSync): { count: number } {
  const counter = { count: 0 };
  db.setAuthorizer((action) => {
    if (action !== constants.SQLITE_TRANSACTION && action !== constants.SQLITE_SAVEPOINT) counter.count++;
    return constants.SQLITE_OK;
  });
  return counter;
}

/** The number of parameters of `sql`: its highest `?N`, or its count of bare `?`. */
function parameterCount(sql: string): number {
  const numbered = [...sql.matchAll(/\?(\d+)/g)].map((match) => Number(match[1]));
  return Math.max(0, ...numbered, (sql.match(/\?(?!\d)/g) ?? []).length);
}

let opened: Store | undefined;
afterEach(async () => {
  await opened?.close();
  opened = undefined;
});

describe("sqlite store statements", () => {
  it("runs every statement it prepares again and again without SQLite compiling it again", () => {
    const { store, prepared } = openWatchedStore();
    opened = store;
    const withParameters = prepared.filter(({ sql }) => parameterCount(sql) > 0);
    expect(withParameters.length).toBeGreaterThan(50);
    const compiles = new Map<DatabaseSync, { count: number }>();
    const recompiled: string[] = [];
    for (const { sql, statement, db } of withParameters) {
      if (!compiles.has(db)) compiles.set(db, countCompiles(db));
      const counter = compiles.get(db)!;
      // Values of both kinds, so a statement reads or refuses them as it would real ones; nothing it writes stays.
      const values = Array.from({ length: parameterCount(sql) }, (_, i) => (i % 2 ? 1 : "x"));
      const execute = () => {
        try {
          statement.all(...values);
        } catch {
          // A refused write (a constraint) has been compiled and bound all the same.
        }
      };
      db.exec("SAVEPOINT reprepare_check");
      try {
        execute();
        counter.count = 0;
        execute();
        execute();
        if (counter.count > 0) recompiled.push(sql.replace(/\s+/g, " "));
      } finally {
        db.exec("ROLLBACK TO reprepare_check");
        db.exec("RELEASE reprepare_check");
      }
    }
    expect(recompiled).toEqual([]);
  });

  it("writes and reads runs with hook chain records without compiling any statement", async () => {
    const { store, prepared } = openWatchedStore();
    opened = store;
    const db = prepared[0].db;
    await store.createSession(session("s1"));
    await store.createDeployment({ id: "d1", tenant: "acme", scripts: [], shadow: [], fromConfig: true, createdMs: 1 });
    const oneRun = async (runId: string) => {
      await store.currentDeployment("acme");
      await store.createRun(run(runId));
      const started = event(runId, 1, { type: "run-started", prompt: "hello", runId });
      await store.write({
        runId,
        events: [{ event: started, json: JSON.stringify(started) }],
        hookCalls: [1, 2].map((attempt) => ({
          callId: "c1",
          hook: "beforeToolCall",
          attempt,
          shadow: false,
          verdict: "allow",
          decisionJson: "{}",
        })),
      });
      await store.saveSnapshot(runId, "pre_inference", turn(`t-${runId}`, ["hello"]));
      await store.listEventTexts(runId, 0, { limit: 100 });
      await store.latestSnapshot(runId);
      await store.listRuns("s1", { limit: 10 });
      await store.sessionHistory("s1");
    };
    // Setting the authorizer makes every statement compile once more: the first run absorbs that.
    const counter = countCompiles(db);
    await oneRun("r1");
    counter.count = 0;
    await oneRun("r2");
    await oneRun("r3");
    expect(await store.listEvents("r3")).toMatchObject([{ seq: 1, type: "run-started" }]);
    expect(counter.count).toBe(0);
  });
});
