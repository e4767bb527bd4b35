// What the first open of a schema-8 store costs this build (migration 9 copies the usage ledger, sums each
// run's usage onto its row and moves the all-time totals; migration 10 copies each run's events, hook chain records
// and snapshots): the store written by main at e5bbdd8 (test/fixtures/store/schema8.db), grown with --runs runs of
// --rows-per-run ledger rows each over 100 tenants and, with --records-per-run N, N events a run (300 bytes each)
// with a snapshot for every second one and a hook chain record for every third, then opened once, timed (wall and
// this process's CPU).
// node scripts/bench/store-migration.mjs [--runs N] [--rows-per-run N] [--records-per-run N]   (after npm run build)
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { DatabaseSync } from "node:sqlite";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { values } = parseArgs({
  options: { runs: { type: "string" }, "rows-per-run": { type: "string" }, "records-per-run": { type: "string" } },
});
const runs = Number(values.runs ?? 100_000);
const rowsPerRun = Number(values["rows-per-run"] ?? 10);
const recordsPerRun = Number(values["records-per-run"] ?? 0);
const { openStore } = await import(pathToFileURL(join(root, "dist/index.js")).href);

const work = mkdtempSync(join(tmpdir(), "hookbox-store-migration-"));
try {
  const file = join(work, "store.db");
  copyFileSync(join(root, "test/fixtures/store/schema8.db"), file);
  const db = new DatabaseSync(file);
  db.exec("BEGIN");
  const run = db.prepare(
    "INSERT INTO runs (id, session_id, inference_id, prompt, options, status, started_ms) VALUES (?, 'sess_history', '', 'p', '{}', 'completed', ?)",
  );
  const row = db.prepare(
    "INSERT INTO usage_ledger (tenant, run_id, at_ms, runs, inferences, input_tokens, output_tokens, cost_usd, tool_calls, sandbox_cpu_ms) VALUES (?, ?, ?, ?, ?, 100, 20, 0.001, ?, 0.5)",
  );
  const event = db.prepare("INSERT INTO events (run_id, seq, type, body) VALUES (?, ?, 'bench', ?)");
  const snapshot = db.prepare(
    "INSERT INTO snapshots (run_id, idx, phase, blocks, head, block_bytes, last_seq, iterations, created_ms) VALUES (?, ?, 'post_tools', '[[0,3]]', ?, 400, ?, 1, 0)",
  );
  const hookCall = db.prepare(
    "INSERT INTO hook_calls (run_id, idx, call_id, hook, attempt, shadow, verdict, decision, payload) VALUES (?, ?, 'c1', 'beforeToolCall', 1, 0, 'proceed', '{}', ?)",
  );
  const text = (bytes) => JSON.stringify({ text: "x".repeat(bytes - 12) });
  const startMs = Date.now() - runs * rowsPerRun;
  for (let i = 0; i < runs; i++) {
    run.run(`run_bench${i}`, startMs + i * rowsPerRun);
    for (let seq = 1; seq <= recordsPerRun; seq++) {
      event.run(`run_bench${i}`, seq, text(300));
      if (seq % 2 === 0) snapshot.run(`run_bench${i}`, seq / 2, text(300), seq);
      if (seq % 3 === 0) hookCall.run(`run_bench${i}`, seq / 3, text(550));
    }
    for (let j = 0; j < rowsPerRun; j++)
      row.run(`tenant${i % 100}`, `run_bench${i}`, startMs + i * rowsPerRun + j, j === 0 ? 1 : 0, j % 3 === 1 ? 1 : 0, j % 3 === 2 ? 1 : 0);
  }
  db.exec("COMMIT");
  const version = db.prepare("PRAGMA user_version").get().user_version;
  db.close();
  const started = performance.now();
  const cpu = process.cpuUsage();
  const store = openStore(file);
  const spent = process.cpuUsage(cpu);
  const wallMs = performance.now() - started;
  const check = await store.runUsage(`run_bench${runs - 1}`);
  const events = await store.listEventTexts(`run_bench${runs - 1}`);
  await store.close();
  if (check.inputTokens !== 100 * rowsPerRun) throw new Error(`the migrated run's usage is ${JSON.stringify(check)}`);
  if (events.length !== recordsPerRun) throw new Error(`the migrated run has ${events.length} events`);
  process.stdout.write(
    `schema ${version} store, ${runs} runs, ${runs * rowsPerRun} ledger rows, ${runs * recordsPerRun} events: first open ${wallMs.toFixed(0)} ms (${((spent.user + spent.system) / 1000).toFixed(0)} ms CPU)\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
