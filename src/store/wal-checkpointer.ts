import { Worker } from "node:worker_threads";

/*
 * A SQLite file store's WAL checkpoints, from a thread of their own. A checkpoint copies the WAL's pages into
 * the database file and fsyncs both files (about 40 MB of WAL at a time): tens to hundreds of milliseconds of
 * waiting on the disk. Run by SQLite's autocheckpoint it happens inside a commit, on the event loop, and every
 * run of the process waits for it. Here a worker thread with a connection of its own checkpoints the WAL once it
 * holds CHECKPOINT_PAGES, PASSIVE (it never blocks the writer), and again while commits land meanwhile (up to
 * CATCH_UP_ROUNDS times a look), until a commit finds the WAL all in the file: that commit starts the WAL over.
 * So the WAL is copied as often and as whole as before (the pages many commits rewrite are copied once), and
 * the event loop waits for none of it. The store's connection keeps an autocheckpoint at twice that size,
 * which bounds the WAL if the thread falls behind or stops.
 *
 * The thread reads how far the WAL goes and how much of it is in the file from the wal-index header (the `-shm`
 * file, https://sqlite.org/walformat.html: `mxFrame` at byte 16, `nBackfill` at byte 96, native byte order),
 * a read of 100 bytes; it looks only when the store has committed since its last look.
 */

/** When the thread starts: a store that commits less than this (a CLI command) never needs one. */
export const CHECKPOINTER_START_COMMITS = 64;
/** The WAL's size, in pages, at which the thread checkpoints it. */
export const CHECKPOINT_PAGES = 10_000;
/** The store connection's `wal_autocheckpoint`: the WAL's bound, reached only if the thread falls behind. */
export const AUTOCHECKPOINT_PAGES = 2 * CHECKPOINT_PAGES;
const CATCH_UP_ROUNDS = 4;
/** How often the thread looks, in milliseconds. */
const POLL_MS = 20;

const SOURCE = `
const { workerData, parentPort } = require("node:worker_threads");
const { DatabaseSync } = require("node:sqlite");
const { openSync, readSync, closeSync } = require("node:fs");
const { file, commits, checkpointPages, catchUpRounds, pollMs } = workerData;
const db = new DatabaseSync(file);
db.exec("PRAGMA synchronous = NORMAL");
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
const header = new Uint32Array(25);
let shm;
let seen = 0;
function look() {
  const committed = Atomics.load(commits, 0);
  if (committed === seen) return;
  seen = committed;
  try {
    shm ??= openSync(file + "-shm", "r");
    if (readSync(shm, header, 0, 100, 0) < 100) return;
    const end = header[4];
    if (end < checkpointPages || header[24] >= end) return;
    for (let round = 0; round < catchUpRounds; round++) {
      const { log, checkpointed } = checkpoint.get();
      if (checkpointed >= log) return;
    }
  } catch {
    // Busy or not there yet (the store's own checkpoint, a WAL being started over): the next look tries again.
  }
}
const timer = setInterval(look, pollMs);
parentPort.on("message", () => {
  clearInterval(timer);
  if (shm !== undefined) closeSync(shm);
  db.close();
  parentPort.close();
});
`;

export class WalCheckpointer {
  private readonly commits = new Int32Array(new SharedArrayBuffer(4));
  private count = 0;
  private worker: { thread: Worker; exited: Promise<unknown> } | undefined;
  private stopped = false;

  constructor(private readonly file: string) {}

  /** Called after each commit of the store's connection. */
  committed(): void {
    this.count += 1;
    Atomics.store(this.commits, 0, this.count);
    if (this.count === CHECKPOINTER_START_COMMITS) this.start();
  }

  /**
   * Stops the thread and closes its connection (before the store's own, so the store's close is the last one);
   * resolves once it has. Undefined when no thread was started: nothing to wait for.
   */
  close(): Promise<void> | undefined {
    this.stopped = true;
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return undefined;
    // Held open until the thread is gone, so a process whose last work is this close waits for it.
    worker.thread.ref();
    worker.thread.postMessage("close");
    return worker.exited.then(() => undefined);
  }

  private start(): void {
    // Under Node's permission model without threads, the autocheckpoint does it all.
    if (this.stopped || process.permission?.has("worker") === false) return;
    const thread = new Worker(SOURCE, {
      eval: true,
      workerData: {
        file: this.file,
        commits: this.commits,
        checkpointPages: CHECKPOINT_PAGES,
        catchUpRounds: CATCH_UP_ROUNDS,
        pollMs: POLL_MS,
      },
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2 },
    });
    // A thread that fails leaves the checkpoints to the autocheckpoint; it never holds the process open.
    thread.on("error", () => {});
    thread.unref();
    this.worker = { thread, exited: new Promise((resolve) => thread.once("exit", resolve)) };
  }
}
