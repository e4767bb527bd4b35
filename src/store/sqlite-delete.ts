import { HookboxError } from "../errors.js";
import { refuseUndeletable } from "./deletable.js";
import { prepare, type SqliteDatabase, type SqliteStatement } from "./sqlite-driver.js";
import type { SqliteBatch } from "./sqlite-batch.js";
import type { DeletedSession } from "./types.js";

/*
 * Deleting a session from the SQLite store (DELETE /v1/sessions/:id, retention): its runs, events, snapshots,
 * log, tool results, hook chain records and pauses, and the bytes they were charged, in one transaction. The usage
 * ledger is kept: what a tenant spent stays billable after its content is gone. The bytes freed are counted the way
 * migration 2 counts stored rows (SQL length()), so a text with characters outside the BMP frees a little less than
 * it was charged, never more.
 */

const RUNS = "SELECT id FROM runs WHERE session_id = ?1";
const SQL = {
  session: "SELECT tenant FROM sessions WHERE id = ?1",
  // A fork keeps its blocks in its source's log (turn-layout.ts): the source stays while a fork refers to it.
  forks: `SELECT id FROM sessions WHERE id != ?1
    AND (instr(coalesce(forked_from, ''), ?1) > 0 OR instr(coalesce(base, ''), ?1) > 0) ORDER BY created_ms LIMIT 5`,
  running: "SELECT id FROM runs WHERE session_id = ?1 AND status = 'running' LIMIT 1",
  bytes: `SELECT
      (SELECT length(tenant_config) + length(defaults) + coalesce(length(base), 0) FROM sessions WHERE id = ?1)
    + (SELECT coalesce(sum(length(block)), 0) FROM session_log WHERE session_id = ?1)
    + (SELECT coalesce(sum(length(prompt) + length(options)), 0) FROM runs WHERE session_id = ?1)
    + (SELECT coalesce(sum(length(body)), 0) FROM events WHERE run_id IN (${RUNS}))
    + (SELECT coalesce(sum(length(blocks) + coalesce(length(head), 0)), 0) FROM snapshots WHERE run_id IN (${RUNS}))
    + (SELECT coalesce(sum(length(turn)), 0) FROM legacy_snapshots WHERE run_id IN (${RUNS}))
    + (SELECT coalesce(sum(length(block)), 0) FROM tool_results WHERE run_id IN (${RUNS}))
    + (SELECT coalesce(sum(length(decision) + coalesce(length(payload), 0) + length(call_id) + length(hook) + length(verdict)), 0)
         FROM hook_calls WHERE run_id IN (${RUNS})) AS bytes`,
  // Events, hook chain records and snapshots (run_records, whose views the byte count reads).
  deleteRunRecords: "DELETE FROM run_records WHERE run_num IN (SELECT num FROM runs WHERE session_id = ?1)",
  deleteToolResults: `DELETE FROM tool_results WHERE run_id IN (${RUNS})`,
  deleteLegacySnapshots: `DELETE FROM legacy_snapshots WHERE run_id IN (${RUNS})`,
  deletePauses: `DELETE FROM pauses WHERE run_id IN (${RUNS})`,
  deleteRuns: "DELETE FROM runs WHERE session_id = ?1",
  deleteLog: "DELETE FROM session_log WHERE session_id = ?1",
  deleteSession: "DELETE FROM sessions WHERE id = ?1",
  // `+?`: parameters hidden from the query planner (sqlite-statements.ts says why).
  // Sessions whose latest run started (or, without runs, that were created) before a time, newest first: a fork
  // is newer than its source, so it goes first and its source can go in the same sweep.
  stale: `SELECT s.id FROM sessions s WHERE s.tenant = +?1
      AND coalesce((SELECT max(r.started_ms) FROM runs r WHERE r.session_id = s.id), s.created_ms) < +?2
    ORDER BY s.created_ms DESC LIMIT +?3`,
};

export class SqliteSessionDeletes {
  private readonly statements: { [Name in keyof typeof SQL]: SqliteStatement };

  constructor(db: SqliteDatabase) {
    this.statements = Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, prepare(db, sql)])) as typeof this.statements;
  }

  /** In the caller's transaction: deletes the session and credits its tenant, or throws NOT_FOUND / SESSION_BUSY / SESSION_FORKED. */
  apply(batch: SqliteBatch, sessionId: string): DeletedSession {
    const s = this.statements;
    const session = s.session.get(sessionId) as { tenant: string } | undefined;
    if (!session) throw new HookboxError("NOT_FOUND", `no session ${sessionId}`, { sessionId });
    refuseUndeletable(
      sessionId,
      (s.running.get(sessionId) as { id: string } | undefined)?.id,
      (s.forks.all(sessionId) as { id: string }[]).map((row) => row.id),
    );
    const freedBytes = (s.bytes.get(sessionId) as { bytes: number }).bytes;
    for (const name of [
      "deleteRunRecords",
      "deleteToolResults",
      "deleteLegacySnapshots",
      "deletePauses",
      "deleteRuns",
      "deleteLog",
      "deleteSession",
    ] as const)
      s[name].run(sessionId);
    batch.charge(session.tenant, -freedBytes);
    return { sessionId, tenant: session.tenant, freedBytes };
  }

  stale(tenant: string, beforeMs: number, limit: number): string[] {
    return (this.statements.stale.all(tenant, beforeMs, limit) as { id: string }[]).map((row) => row.id);
  }
}
