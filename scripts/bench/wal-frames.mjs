// What the SQLite file store writes per run of the bench's HTTP workload (scripts/bench/http-workload.mjs): the
// pages appended to the WAL (each commit appends every page it changed, whole), commits, and pages by table or
// index. A second connection holds a read transaction over the timed part, so no checkpoint starts the WAL over
// and every frame of the timed runs stays in it; pages are named with SQLite's dbstat table afterwards.
// node scripts/bench/wal-frames.mjs [--clients N] [--runs-per-client N] [--top N]   (after npm run build)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DatabaseSync } from "node:sqlite";
import { startServe, timedRuns, warmUp, writeTenant } from "./http-workload.mjs";

const { values } = parseArgs({ options: { clients: { type: "string" }, "runs-per-client": { type: "string" }, top: { type: "string" } } });
const clients = Number(values.clients ?? 50);

/** The WAL's valid frames (those after its header with its current salts), as [page, commitSize] pairs. */
function walFrames(file) {
  const wal = readFileSync(file);
  if (wal.length < 32) return [];
  const pageSize = wal.readUInt32BE(8);
  const salts = [wal.readUInt32BE(16), wal.readUInt32BE(20)];
  const frames = [];
  for (let offset = 32; offset + 24 + pageSize <= wal.length; offset += 24 + pageSize) {
    if (wal.readUInt32BE(offset + 8) !== salts[0] || wal.readUInt32BE(offset + 12) !== salts[1]) break;
    frames.push([wal.readUInt32BE(offset), wal.readUInt32BE(offset + 4)]);
  }
  return frames;
}

const work = mkdtempSync(join(tmpdir(), "hookbox-wal-frames-"));
let server;
try {
  writeTenant(work);
  const file = join(work, "bench.db");
  server = await startServe(work, file);
  await warmUp([server.url], clients);
  const reader = new DatabaseSync(file, { readOnly: true });
  reader.exec("BEGIN");
  reader.prepare("SELECT count(*) FROM sessions").get(); // the read transaction starts here: the WAL is kept from now
  const before = walFrames(`${file}-wal`).length;
  const timed = await timedRuns([server.url], { clients, runsPerClient: Number(values["runs-per-client"] ?? 2) });
  const frames = walFrames(`${file}-wal`).slice(before);
  reader.exec("COMMIT");
  reader.close();
  const names = new DatabaseSync(file, { readOnly: true });
  const tableOf = new Map(
    names
      .prepare("SELECT pageno, name, pagetype FROM dbstat")
      .all()
      .map((row) => [row.pageno, `${row.name} (${row.pagetype})`]),
  );
  names.close();
  const byTable = new Map();
  let commits = 0;
  for (const [page, commitSize] of frames) {
    if (commitSize > 0) commits += 1;
    const name = tableOf.get(page) ?? "(free or new since)";
    byTable.set(name, (byTable.get(name) ?? 0) + 1);
  }
  const perRun = (n) => (n / timed.runs).toFixed(1).padStart(7);
  process.stdout.write(
    `${timed.runs} runs: ${frames.length} pages appended to the WAL (${perRun(frames.length)} a run), ${commits} commits (${perRun(commits)} a run), ${(frames.length / Math.max(commits, 1)).toFixed(1)} pages a commit\n\npages a run, by table or index:\n` +
      [...byTable.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, Number(values.top ?? 30))
        .map(([name, n]) => `${perRun(n)}  ${name}`)
        .join("\n") +
      "\n",
  );
} finally {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
}
