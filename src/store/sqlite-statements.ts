import { prepare, type SqliteDatabase, type SqliteStatement } from "./sqlite-driver.js";

/* The SQL of the SQLite store's sessions, runs, events, snapshots, pauses, tool results and usage ledger (sqlite.ts). */

const USAGE_SUMS = [
  "coalesce(sum(runs), 0) AS runs",
  "coalesce(sum(inferences), 0) AS inferences",
  "coalesce(sum(input_tokens), 0) AS inputTokens",
  "coalesce(sum(output_tokens), 0) AS outputTokens",
  "coalesce(sum(cost_usd), 0) AS costUsd",
  "coalesce(sum(tool_calls), 0) AS toolCalls",
  "coalesce(sum(sandbox_cpu_ms), 0) AS sandboxCpuMs",
].join(", ");

/** Every statement the store runs, by name. */
const SQL = {
  insertSession:
    "INSERT INTO sessions (id, tenant, tenant_config, defaults, created_ms, forked_from, initial_turn) VALUES (?, ?, ?, ?, ?, ?, ?)",
  getSession: "SELECT * FROM sessions WHERE id = ?",
  insertRun:
    "INSERT INTO runs (id, session_id, inference_id, prompt, options, status, iterations, started_ms, last_seq, owner_pid, owner_instance, deployment, deployment_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  getRun: "SELECT * FROM runs WHERE id = ?",
  runsOfSession: "SELECT * FROM runs WHERE session_id = ? ORDER BY started_ms, rowid LIMIT ? OFFSET ?",
  countRuns: "SELECT count(*) AS n FROM runs WHERE session_id = ?",
  reopenRun:
    "UPDATE runs SET status = 'running', reason = NULL, error_code = NULL, finished_ms = NULL, owner_pid = ?, owner_instance = ?, iterations = ? WHERE id = ?",
  insertEvent: "INSERT INTO events (run_id, seq, type, body) VALUES (?, ?, ?, ?)",
  // A run created before the loop named its inference id takes it from its first event.
  advanceSeq:
    "UPDATE runs SET last_seq = ?, iterations = iterations + ?, inference_id = CASE WHEN inference_id = '' THEN ? ELSE inference_id END WHERE id = ? AND last_seq = ?",
  finishRun:
    "UPDATE runs SET status = ?, reason = ?, error_code = ?, iterations = ?, finished_ms = ?, owner_pid = NULL, owner_instance = NULL WHERE id = ?",
  listEvents: "SELECT seq, type, body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
  openPause: "INSERT OR REPLACE INTO pauses (pause_id, run_id, phase, deadline_ms, pending, opened_ms) VALUES (?, ?, ?, ?, ?, ?)",
  closePause: "UPDATE pauses SET closed_reason = ? WHERE pause_id = ? AND run_id = ?",
  closeAllPauses: "UPDATE pauses SET closed_reason = ? WHERE run_id = ? AND closed_reason IS NULL",
  openPauses: "SELECT * FROM pauses WHERE run_id = ? AND closed_reason IS NULL ORDER BY opened_ms",
  insertSnapshot:
    "INSERT INTO snapshots (run_id, idx, phase, turn, last_seq, iterations, created_ms) VALUES (?, (SELECT coalesce(max(idx), 0) + 1 FROM snapshots WHERE run_id = ?), ?, ?, ?, ?, ?) RETURNING idx",
  latestSnapshot: "SELECT * FROM snapshots WHERE run_id = ? ORDER BY idx DESC LIMIT 1",
  listSnapshots: "SELECT * FROM snapshots WHERE run_id = ? ORDER BY idx",
  recordToolResult: "INSERT OR REPLACE INTO tool_results (run_id, call_id, block) VALUES (?, ?, ?)",
  listToolResults: "SELECT call_id, block FROM tool_results WHERE run_id = ?",
  runningRuns: "SELECT * FROM runs WHERE status = 'running'",
  // The tenant comes from the run's session, so the ledger can be summed per tenant without a join.
  insertUsage: `INSERT INTO usage_ledger (tenant, run_id, at_ms, runs, inferences, input_tokens, output_tokens, cost_usd, tool_calls, sandbox_cpu_ms)
       SELECT s.tenant, r.id, ?, ?, ?, ?, ?, ?, ?, ? FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = ?`,
  usageSince: `SELECT ${USAGE_SUMS} FROM usage_ledger WHERE tenant = ? AND at_ms >= ?`,
  usageOfRun: `SELECT ${USAGE_SUMS} FROM usage_ledger WHERE run_id = ?`,
};

export type SqliteStatements = { [Name in keyof typeof SQL]: SqliteStatement };

/** The store's statements, prepared once per database. */
export function prepareStatements(db: SqliteDatabase): SqliteStatements {
  return Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, prepare(db, sql)])) as SqliteStatements;
}
