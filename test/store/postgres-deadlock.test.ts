import { afterEach, describe, expect, it } from "vitest";
import pg from "pg";
import { openPostgresStore, type Store } from "../../src/store/index.js";
import { event, run, session } from "./helpers.js";
import { pgServer } from "./stores.js";

/*
 * A deadlock on PostgreSQL is a normal outcome, not a failure of the store: a node's batched run writes lock run
 * rows in the order the writes came, and another transaction (the node's lease renewal, another node) may lock
 * the same rows in another order. PostgreSQL breaks the cycle by rolling one side back; the store does that
 * side's batch again, so no run fails with a STORE error for it (a run of the cluster bench did, before).
 */

let store: Store | undefined;
let other: pg.Client | undefined;
afterEach(async () => {
  await other?.end().catch(() => undefined);
  await store?.close();
  other = store = undefined;
});

/**
 * One try at the cycle: the other transaction holds rx's row; the store's batch (ry's write, then rx's) takes ry's
 * and waits on rx; then the other transaction asks for ry's. PostgreSQL fails the side whose deadlock check runs
 * once the cycle exists: the batch when the other side asked within its deadlock_timeout (1 s), else the other
 * side (a loaded machine), which then says nothing of the store: undefined, try again.
 */
async function deadlockTry(url: string, attempt: number) {
  const [rx, ry] = [`rx${attempt}`, `ry${attempt}`];
  await store!.createSession(session(`sx${attempt}`));
  await store!.createSession(session(`sy${attempt}`));
  await store!.createRun(run(rx, `sx${attempt}`));
  await store!.createRun(run(ry, `sy${attempt}`));
  other = new pg.Client({ connectionString: url });
  await other.connect();
  await other.query("BEGIN");
  await other.query("UPDATE runs SET iterations = iterations WHERE id = $1", [rx]);
  const written = Promise.allSettled(
    [ry, rx].map((runId) => {
      const first = event(runId, 1, { type: "run-started", prompt: "hello" });
      first.sessionId = runId === rx ? `sx${attempt}` : `sy${attempt}`;
      return store!.write({ runId, events: [{ event: first, json: JSON.stringify(first) }], epoch: 1 });
    }),
  );
  const deadline = Date.now() + 20_000;
  while (
    (await other.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")).rowCount === 0
  ) {
    if (Date.now() > deadline) throw new Error(`the store's batch never waited on ${rx}'s row`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const client = other;
  other = undefined;
  try {
    await client.query("UPDATE runs SET iterations = iterations + 1 WHERE id = $1", [ry]);
    await client.query("COMMIT");
  } catch (error) {
    if ((error as { code?: string }).code !== "40P01") throw error;
    await client.query("ROLLBACK");
    await written;
    return undefined;
  } finally {
    await client.end();
  }
  return { results: await written, runs: [rx, ry] };
}

describe("postgres store: a batch of run writes that a deadlock rolls back", () => {
  it("is done again and committed whole; the other side of the deadlock commits too", async () => {
    const url = await (await pgServer()).createDatabase();
    store = await openPostgresStore(url);
    let outcome: Awaited<ReturnType<typeof deadlockTry>>;
    for (let attempt = 1; attempt <= 5 && !outcome; attempt++) outcome = await deadlockTry(url, attempt);
    if (!outcome) throw new Error("in 5 tries the store's batch was never the deadlock's victim");
    expect(
      outcome.results.map((result) => result.status),
      JSON.stringify(outcome.results),
    ).toEqual(["fulfilled", "fulfilled"]);
    for (const runId of outcome.runs) {
      expect((await store.listEvents(runId)).map((e) => e.type)).toEqual(["run-started"]);
      expect(await store.getRun(runId)).toMatchObject({ lastSeq: 1, status: "running" });
    }
    // The other side's update of ry committed too.
    expect(await store.getRun(outcome.runs[1])).toMatchObject({ iterations: 1 });
  }, 120_000);
});
