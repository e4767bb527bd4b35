import { describe, expect, it } from "vitest";
import { DatabaseSync } from "node:sqlite";
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStore, STORE_SCHEMA_VERSION } from "../../src/store/index.js";
import { deadPid, event, run, session, tempDir, turn, withCommittedView } from "./helpers.js";

const bootId = () => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
/** `<boot id>:<start ticks>` of a live process, read as another process would. */
const instanceOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return `${bootId()}:${stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]}`;
};

describe("sqlite store file", () => {
  it("reads a session's history without committing queued writes only when told the session has none queued", () =>
    withCommittedView(async (store, committedSessions) => {
      await store.createSession(session("s1"));
      const queued = store.createSession(session("s2"));
      expect(await store.sessionHistory("s1", { sessionWritesCommitted: true })).toBeUndefined();
      // Still queued: a run start's read leaves other sessions' writes to the group commit.
      expect(committedSessions()).toBe(1);
      // Any other read commits them first, so it sees the writes issued before it.
      expect(await store.sessionHistory("s2")).toBeUndefined();
      expect(committedSessions()).toBe(2);
      await queued;
    }));

  it("keeps everything committed across a reopen", async () => {
    const file = join(tempDir(), "s.db");
    const first = openStore(file);
    await first.createSession(session());
    await first.createRun(run("r1"));
    await first.appendEvent("r1", event("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" }));
    await first.saveSnapshot("r1", "pre_inference", turn("t1", ["hello"]));
    await first.close();
    const second = openStore(file);
    expect(await second.listEvents("r1")).toMatchObject([{ seq: 1, type: "run-started" }]);
    expect((await second.latestSnapshot("r1"))?.turn.blocks[0].payload).toEqual({ text: "hello" });
    // This process is alive: its run is still running, not interrupted.
    expect((await second.getRun("r1"))?.status).toBe("running");
    await second.close();
  });

  it("marks a run whose owner process died as interrupted on open", async () => {
    const file = join(tempDir(), "s.db");
    const first = openStore(file);
    await first.createSession(session());
    await first.createRun(run("r1", "s1", deadPid()));
    await first.appendEvent("r1", event("r1", 1, { type: "run-started", prompt: "hello", runId: "r1" }));
    await first.createRun(run("r2", "s1", deadPid()));
    await first.appendEvent("r2", event("r2", 1, { type: "run-finished", status: "completed", iterations: 0 }));
    await first.close();
    const second = openStore(file);
    expect(await second.getRun("r1")).toMatchObject({ status: "interrupted", lastSeq: 2 });
    expect((await second.listEvents("r1")).map((e) => e.type)).toEqual(["run-started", "run-interrupted"]);
    expect((await second.getRun("r2"))?.status).toBe("completed");
    await second.close();
  });

  it("takes a live pid that belongs to another process instance (PID reuse) for a dead owner, and a live owner's for live", async () => {
    const file = join(tempDir(), "s.db");
    const first = openStore(file);
    await first.createSession(session());
    // PID 1 in a container after a restart: the row names this very pid, but another start of it.
    await first.createRun({ ...run("reused"), ownerInstance: "0e0e0e0e-dead-boot-0000-000000000000:12345" });
    // Written before instances were recorded: this pid, no instance. This process never wrote it.
    const { ownerInstance: _instance, ...legacy } = run("legacy");
    await first.createRun(legacy);
    await first.createRun(run("ours"));
    // Another live process (this test's parent) with its own instance: left alone, as is a legacy row naming it.
    const parent = { ownerPid: process.ppid };
    await first.createRun({ ...run("parent", "s1", parent.ownerPid), ownerInstance: instanceOf(process.ppid) });
    await first.createRun({ ...run("parent-legacy", "s1", parent.ownerPid) });
    // The parent's pid with a start time it does not have: a process that had its pid before.
    await first.createRun({ ...run("parent-reused", "s1", parent.ownerPid), ownerInstance: `${bootId()}:1` });
    await first.close();
    const second = openStore(file);
    const status = async (id: string) => (await second.getRun(id))?.status;
    expect(await status("reused")).toBe("interrupted");
    expect(await status("legacy")).toBe("interrupted");
    expect(await status("ours")).toBe("running");
    expect(await status("parent")).toBe("running");
    expect(await status("parent-legacy")).toBe("running");
    expect(await status("parent-reused")).toBe("interrupted");
    await second.close();
  });

  it("checkpoints its WAL every 10,000 pages, not SQLite's default 1,000", async () => {
    const file = join(tempDir(), "s.db");
    const store = openStore(file);
    await store.createSession(session());
    await store.createRun(run("r1"));
    // About 6 MB in 60 commits: past the 4 MB at which SQLite's default would checkpoint and start the WAL over.
    for (let seq = 1; seq <= 60; seq++)
      await store.appendEvent("r1", event("r1", seq, { type: "log", script: "s", level: "info", message: "x".repeat(100_000) }));
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(5_500_000);
    expect(await store.listEvents("r1")).toHaveLength(60);
    await store.close();
  });

  it("refuses a file that is not a database, naming it", () => {
    const file = join(tempDir(), "corrupt.db");
    writeFileSync(file, "this is not sqlite at all, just text that is long enough to look like a header".repeat(20));
    expect(() => openStore(file)).toThrowError(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}.*not a hookbox store`));
  });

  it("refuses a store written by a newer schema", () => {
    const file = join(tempDir(), "newer.db");
    openStore(file).close();
    const db = new DatabaseSync(file);
    db.exec(`PRAGMA user_version = ${STORE_SCHEMA_VERSION + 1}`);
    db.close();
    expect(() => openStore(file)).toThrowError(/newer\.db was written by a newer hookbox \(store schema version \d+/);
  });

  it("refuses another application's SQLite file without touching it", () => {
    const file = join(tempDir(), "other.db");
    const db = new DatabaseSync(file);
    db.exec("CREATE TABLE notes (x TEXT)");
    db.close();
    expect(() => openStore(file)).toThrowError(/other\.db is a SQLite database with tables of its own/);
  });

  it("reports a read-only location, naming the file", () => {
    // root ignores permission bits, so as root use a location nobody can write (procfs).
    if (process.getuid?.() === 0) {
      expect(() => openStore("/proc/hookbox-test.db")).toThrowError(
        /store \/proc\/hookbox-test\.db cannot be opened: unable to open database file/,
      );
      return;
    }
    const dir = join(tempDir(), "ro");
    mkdirSync(dir);
    const file = join(dir, "s.db");
    chmodSync(dir, 0o500);
    try {
      expect(() => openStore(file)).toThrowError(new RegExp(`store ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} .*(writable|read-only)`));
    } finally {
      chmodSync(dir, 0o700);
    }
  });

  it("reports a missing directory, naming the file", () => {
    const file = join(tempDir(), "no", "such", "dir", "s.db");
    expect(() => openStore(file)).toThrowError(/no\/such\/dir\/s\.db cannot be opened: .*directory does not exist/);
  });
});
