import { describe, expect, it } from "vitest";
import { DatabaseSync } from "node:sqlite";
import { copyFileSync, existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "../../src/store/index.js";
import { AUTOCHECKPOINT_PAGES, CHECKPOINT_PAGES, CHECKPOINTER_START_COMMITS } from "../../src/store/wal-checkpointer.js";
import { event, run, session, tempDir } from "./helpers.js";

/**
 * Events committed into the database file itself (not only its WAL): a copy of the file alone, opened without its
 * WAL. A copy taken while a checkpoint writes the file can be torn: it counts as none yet.
 */
function eventsInDatabaseFile(file: string): number {
  const copy = `${file}.copy`;
  rmSync(copy, { force: true });
  copyFileSync(file, copy);
  const db = new DatabaseSync(copy);
  try {
    // Before the first checkpoint even the schema is only in the WAL.
    if (!db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'events'").get()) return 0;
    return (db.prepare("SELECT count(*) AS n FROM events").get() as { n: number }).n;
  } catch {
    return 0;
  } finally {
    db.close();
    rmSync(copy, { force: true });
  }
}

const threads = () => readdirSync("/proc/self/task").length;

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

describe("sqlite store file: the WAL's checkpoints", () => {
  it("copies a WAL of 10,000 pages into the database file from a thread of its own, short of the store's autocheckpoint", async () => {
    const file = join(tempDir(), "s.db");
    const store = openStore(file);
    const before = threads();
    await store.createSession(session());
    await store.createRun(run("r1"));
    // About 11,700 pages in 80 commits: past CHECKPOINT_PAGES, short of the autocheckpoint, which alone would
    // leave the database file without a single event.
    const commits = 80;
    expect(commits).toBeGreaterThan(CHECKPOINTER_START_COMMITS);
    expect(commits * 600_000).toBeGreaterThan(CHECKPOINT_PAGES * 4096);
    expect(commits * 600_000).toBeLessThan(AUTOCHECKPOINT_PAGES * 4096);
    for (let seq = 1; seq <= commits; seq++)
      await store.appendEvent("r1", event("r1", seq, { type: "log", script: "s", level: "info", message: "x".repeat(600_000) }));
    expect(threads()).toBeGreaterThan(before);
    // The thread checkpoints the WAL it finds at 10,000 pages and more (about 68 events), with no write to prompt it.
    expect(await until(() => eventsInDatabaseFile(file) >= 60)).toBe(true);
    expect(await store.listEvents("r1")).toHaveLength(commits);
    await store.close();
    // The thread ended with the store, and the store's connection was the last: its close checkpointed and removed the WAL.
    expect(threads()).toBe(before);
    expect(existsSync(`${file}-wal`)).toBe(false);
    expect(eventsInDatabaseFile(file)).toBe(commits);
  });

  it("starts no thread for a store that commits a few times (a command line's)", async () => {
    const file = join(tempDir(), "s.db");
    const store = openStore(file);
    const before = threads();
    await store.createSession(session());
    await store.createRun(run("r1"));
    for (let seq = 1; seq < CHECKPOINTER_START_COMMITS - 2; seq++)
      await store.appendEvent("r1", event("r1", seq, { type: "log", script: "s", level: "info", message: "x".repeat(10_000) }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(threads()).toBe(before);
    await store.close();
  });
});
