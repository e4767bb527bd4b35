import { prepare, type SqliteDatabase, type SqliteStatement } from "./sqlite-driver.js";

/* The SQL of the SQLite store's sessions, runs, events, snapshots, logs, pauses, tool results and usage (sqlite.ts). */

const USAGE_COLUMNS = ["runs", "inferences", "input_tokens", "output_tokens", "cost_usd", "tool_calls", "sandbox_cpu_ms"];
const USAGE_NAMES = ["runs", "inferences", "inputTokens", "outputTokens", "costUsd", "toolCalls", "sandboxCpuMs"];
const USAGE_SUMS = USAGE_COLUMNS.map((column, i) => `coalesce(sum(${column}), 0) AS ${USAGE_NAMES[i]}`).join(", ");

/** What a row of run_records is (its `kind`): the views events, hook_calls and snapshots each show one kind. */
export const RECORD_KIND = { event: 0, hookCall: 1, snapshot: 2 } as const;

/*
 * A parameter the query planner could read is written `+?`. SQLite compiles a statement again at every execution when
 * its plan may depend on a bound value: one with `LIMIT ?`, and since SQLite 3.54 (Node 26.12) one whose `column = ?`
 * also serves an ORDER BY, a min/max or a join. That costs several times the statement itself. A unary plus leaves
 * the value as it is and hides it from the planner; the plan stays the same (test/store/sqlite-reprepare.test.ts runs
 * every statement of the store and fails on one SQLite compiles again).
 */

/** Every statement the store runs, by name. */
const SQL = {
  insertSession:
    "INSERT INTO sessions (id, tenant, tenant_config, defaults, created_ms, forked_from, base, log_length) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  getSession: "SELECT * FROM sessions WHERE id = ?",
  tenantOfSession: "SELECT tenant FROM sessions WHERE id = ?",
  listSessions: `SELECT s.id, s.tenant, s.created_ms,
      (SELECT count(*) FROM runs r WHERE r.session_id = s.id) AS runs,
      (SELECT json_object('id', r.id, 'status', r.status, 'prompt', r.prompt, 'startedMs', r.started_ms)
         FROM runs r WHERE r.session_id = s.id ORDER BY r.started_ms DESC, r.rowid DESC LIMIT 1) AS last_run
    FROM sessions s WHERE (+?1 IS NULL OR s.tenant = +?1) AND (+?2 IS NULL OR s.created_ms > +?2 OR (s.created_ms = +?2 AND s.id > +?3))
    ORDER BY s.created_ms, s.id LIMIT +?4`,
  insertRun:
    "INSERT INTO runs (id, session_id, inference_id, prompt, options, status, iterations, started_ms, last_seq, owner_pid, owner_instance, deployment, deployment_id, epoch, num) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, (SELECT coalesce(max(num), 0) + 1 FROM runs)) RETURNING num",
  getRun: "SELECT * FROM runs WHERE id = ?",
  runOwner: "SELECT r.session_id, s.tenant FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = +?",
  runPosition: "SELECT last_seq, epoch, num FROM runs WHERE id = ?",
  runNumber: "SELECT num FROM runs WHERE id = ?",
  runsOfSession: "SELECT * FROM runs WHERE session_id = +? ORDER BY started_ms, rowid LIMIT +? OFFSET +?",
  countRuns: "SELECT count(*) AS n FROM runs WHERE session_id = ?",
  reopenRun:
    "UPDATE runs SET status = 'running', reason = NULL, error_code = NULL, finished_ms = NULL, owner_pid = ?, owner_instance = ?, iterations = ?, epoch = epoch + 1 WHERE id = ? AND status = 'interrupted' RETURNING *",
  // A run's events, hook chain records and snapshots are rows of run_records (schema 10; kinds in RECORD_KIND), keyed
  // by the run's number (schema 11, runs.num), read through the views of the tables they replaced (events, hook_calls,
  // snapshots), which show the run's id.
  insertEvent: `INSERT INTO run_records (run_num, seq, kind, idx, type, body) VALUES (?, ?, ${RECORD_KIND.event}, 0, ?, ?)`,
  // One update for a write's events: they follow the committed seq, or nothing of the write is kept. A run
  // created before the loop named its inference id takes it from its first event.
  // With an epoch (?6), only its owner's writes are kept.
  // The run's own tokens and cost (what a resumed run's budget starts from) ride on the same update (?7-?9).
  advanceSeq: `UPDATE runs SET last_seq = ?1, iterations = iterations + ?2, inference_id = CASE WHEN inference_id = '' THEN ?3 ELSE inference_id END,
      input_tokens = input_tokens + ?7, output_tokens = output_tokens + ?8, cost_usd = cost_usd + ?9
    WHERE id = ?4 AND last_seq = ?5 AND (?6 IS NULL OR epoch = ?6)`,
  finishRun:
    "UPDATE runs SET status = ?, reason = ?, error_code = ?, iterations = ?, finished_ms = ?, owner_pid = NULL, owner_instance = NULL WHERE id = ?",
  listEvents: "SELECT seq, type, body FROM events WHERE run_id = +? AND seq > +? ORDER BY seq LIMIT +?",
  openPause: "INSERT OR REPLACE INTO pauses (pause_id, run_id, phase, deadline_ms, pending, opened_ms) VALUES (?, ?, ?, ?, ?, ?)",
  closePause: "UPDATE pauses SET closed_reason = ? WHERE pause_id = ? AND run_id = ?",
  closeAllPauses: "UPDATE pauses SET closed_reason = ? WHERE run_id = ? AND closed_reason IS NULL",
  openPauses: "SELECT * FROM pauses WHERE run_id = +? AND closed_reason IS NULL ORDER BY opened_ms",
  // Open pauses only exist on running runs (a run's end closes them), so runs_by_status finds them.
  tenantPauses: `SELECT p.*, r.session_id FROM runs r JOIN sessions s ON s.id = r.session_id
      JOIN pauses p ON p.run_id = r.id AND p.closed_reason IS NULL
    WHERE r.status = 'running' AND s.tenant = +? ORDER BY p.opened_ms, p.rowid`,
  tenantRuns: `SELECT r.* FROM runs r JOIN sessions s ON s.id = r.session_id
    WHERE s.tenant = +?1
      AND (+?2 IS NULL OR r.session_id = +?2)
      AND (+?3 IS NULL OR r.status = +?3)
      AND (+?4 IS NULL OR r.started_ms >= +?4)
      AND (+?5 IS NULL OR (r.started_ms, r.rowid) < (SELECT started_ms, rowid FROM runs WHERE id = +?5))
    ORDER BY r.started_ms DESC, r.rowid DESC LIMIT +?6`,
  // A session's log: a snapshot's new blocks go after its last position, in the write's transaction. Read from
  // the log's own b-tree (whose last page the insert rewrites anyway), not kept in the session's row, so a
  // snapshot does not rewrite the sessions page too; `log_length` stays as it was at creation.
  nextLogPosition: "SELECT coalesce(max(pos) + 1, 0) AS next FROM session_log WHERE session_id = +?",
  insertLogBlock: "INSERT INTO session_log (session_id, pos, block) VALUES (?, ?, ?)",
  logBlocks: "SELECT block FROM session_log WHERE session_id = +? AND pos >= +? AND pos < +? ORDER BY pos",
  // A snapshot's seq is its last_seq; a run's seq only grows, so its snapshots in (seq, idx) order are in idx order,
  // the order of the index by run.
  insertSnapshot: `INSERT INTO run_records (run_num, idx, phase, blocks, head, block_bytes, seq, iterations, created_ms, kind)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ${RECORD_KIND.snapshot})`,
  latestSnapshot:
    "SELECT s.*, r.session_id FROM snapshots s JOIN runs r ON r.id = s.run_id WHERE s.run_id = +? ORDER BY s.last_seq DESC, s.idx DESC LIMIT 1",
  listSnapshots: "SELECT s.*, r.session_id FROM snapshots s JOIN runs r ON r.id = s.run_id WHERE s.run_id = +? ORDER BY s.last_seq, s.idx",
  // A snapshot whose head is the same as the one before it stores none: the latest stored one up to it is its head.
  snapshotHead:
    "SELECT head FROM snapshots WHERE run_id = +?1 AND last_seq <= +?2 AND idx <= +?3 AND head IS NOT NULL ORDER BY last_seq DESC, idx DESC LIMIT 1",
  latestLegacySnapshot: "SELECT * FROM legacy_snapshots WHERE run_id = +? ORDER BY idx DESC LIMIT 1",
  listLegacySnapshots: "SELECT * FROM legacy_snapshots WHERE run_id = +? ORDER BY idx",
  // A session's runs, latest first (of those started before a given run, with ?2).
  runsLatestFirst: `SELECT r.id FROM runs r WHERE r.session_id = +?1
      AND (+?2 IS NULL OR r.started_ms < (SELECT started_ms FROM runs WHERE id = +?2)
        OR (r.started_ms = (SELECT started_ms FROM runs WHERE id = +?2) AND r.rowid < (SELECT rowid FROM runs WHERE id = +?2)))
    ORDER BY r.started_ms DESC, r.rowid DESC`,
  recordToolResult: "INSERT OR REPLACE INTO tool_results (run_id, call_id, block) VALUES (?, ?, ?)",
  listToolResults: "SELECT call_id, block FROM tool_results WHERE run_id = ?",
  // A hook chain record follows the run's seq when it is written (?2); its index is one more than the run's latest
  // record's, found from the end of the run's rows in the index.
  insertHookCall: `INSERT INTO run_records (run_num, seq, kind, idx, call_id, hook, attempt, shadow, verdict, decision, payload)
    VALUES (?1, ?2, ${RECORD_KIND.hookCall}, coalesce((SELECT idx FROM run_records WHERE run_num = +?1 AND kind = ${RECORD_KIND.hookCall}
      ORDER BY seq DESC, idx DESC LIMIT 1), 0) + 1, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
  runningRuns: "SELECT * FROM runs WHERE status = 'running'",
  insertUsage: `INSERT INTO usage_ledger (tenant, at_ms, run_id, seq, ${USAGE_COLUMNS.join(", ")}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  usageTotals: `SELECT ${USAGE_COLUMNS.map((column, i) => `${column} AS ${USAGE_NAMES[i]}`).join(", ")} FROM tenant_usage WHERE tenant = ?`,
  usageSince: `SELECT ${USAGE_SUMS} FROM usage_ledger WHERE tenant = ? AND at_ms >= ?`,
  usageOfRun: "SELECT input_tokens AS inputTokens, output_tokens AS outputTokens, cost_usd AS costUsd FROM runs WHERE id = ?",
  tenantBytes: "SELECT bytes FROM tenant_usage WHERE tenant = ?",
  // Moves when another connection commits (committed-positions.ts).
  dataVersion: "PRAGMA data_version",
  allTenantBytes: "SELECT tenant, bytes FROM tenant_usage",
  // A tenant's stored bytes and all-time usage share one row: one update per transaction and tenant.
  addTenantTotals: `INSERT INTO tenant_usage (tenant, bytes, ${USAGE_COLUMNS.join(", ")}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (tenant) DO UPDATE SET bytes = bytes + excluded.bytes, ${USAGE_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`,
  savepoint: "SAVEPOINT hookbox_write",
  release: "RELEASE hookbox_write",
  rollbackTo: "ROLLBACK TO hookbox_write",
};

export type SqliteStatements = { [Name in keyof typeof SQL]: SqliteStatement };

/** The store's statements, prepared once per database. */
export function prepareStatements(db: SqliteDatabase): SqliteStatements {
  return Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, prepare(db, sql)])) as SqliteStatements;
}
