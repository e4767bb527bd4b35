import { HookboxError } from "../../errors.js";
import { refuseUndeletable } from "../deletable.js";
import type { DeletedSession } from "../types.js";
import type { PgTransaction } from "./pg-commit.js";

/*
 * Deleting a session from the PostgreSQL store (DELETE /v1/sessions/:id, retention), as the SQLite store does
 * (src/store/sqlite-delete.ts): its runs, events, snapshots, log, tool results, hook chain records and pauses, and
 * the bytes they were charged, in one transaction; the usage ledger stays. The session's row is locked first, so
 * a run that another node starts on it meanwhile waits for the delete (and then finds no session).
 */

const RUNS = "SELECT id FROM runs WHERE session_id = $1";
const BYTES = `SELECT
    (SELECT length(tenant_config) + length(defaults) + coalesce(length(base), 0) FROM sessions WHERE id = $1)
  + (SELECT coalesce(sum(length(block)), 0) FROM session_log WHERE session_id = $1)
  + (SELECT coalesce(sum(length(prompt) + length(options)), 0) FROM runs WHERE session_id = $1)
  + (SELECT coalesce(sum(length(body)), 0) FROM events WHERE run_id IN (${RUNS}))
  + (SELECT coalesce(sum(length(blocks) + coalesce(length(head), 0)), 0) FROM snapshots WHERE run_id IN (${RUNS}))
  + (SELECT coalesce(sum(length(block)), 0) FROM tool_results WHERE run_id IN (${RUNS}))
  + (SELECT coalesce(sum(length(decision) + coalesce(length(payload), 0) + length(call_id) + length(hook) + length(verdict)), 0)
       FROM hook_calls WHERE run_id IN (${RUNS})) AS bytes`;
/** Children first: every table here refers to runs or sessions. */
const DELETES = [
  `DELETE FROM hook_calls WHERE run_id IN (${RUNS})`,
  `DELETE FROM tool_results WHERE run_id IN (${RUNS})`,
  `DELETE FROM events WHERE run_id IN (${RUNS})`,
  `DELETE FROM snapshots WHERE run_id IN (${RUNS})`,
  `DELETE FROM pauses WHERE run_id IN (${RUNS})`,
  `DELETE FROM run_controls WHERE run_id IN (${RUNS})`,
  "DELETE FROM runs WHERE session_id = $1",
  "DELETE FROM session_log WHERE session_id = $1",
  "DELETE FROM sessions WHERE id = $1",
];

/** In the caller's transaction: deletes the session and credits its tenant, or throws NOT_FOUND / SESSION_BUSY / SESSION_FORKED. */
export async function deleteSessionIn(tx: PgTransaction, sessionId: string): Promise<DeletedSession> {
  const session = (await tx.query<{ tenant: string }>("SELECT tenant FROM sessions WHERE id = $1 FOR UPDATE", [sessionId])).rows[0];
  if (!session) throw new HookboxError("NOT_FOUND", `no session ${sessionId}`, { sessionId });
  const running = (await tx.query<{ id: string }>("SELECT id FROM runs WHERE session_id = $1 AND status = 'running' LIMIT 1", [sessionId]))
    .rows[0]?.id;
  // A fork keeps its blocks in its source's log (turn-layout.ts): the source stays while a fork refers to it.
  const forks = await tx.query<{ id: string }>(
    `SELECT id FROM sessions WHERE id <> $1
       AND (strpos(coalesce(forked_from, ''), $1) > 0 OR strpos(coalesce(base, ''), $1) > 0) ORDER BY created_ms LIMIT 5`,
    [sessionId],
  );
  refuseUndeletable(
    sessionId,
    running,
    forks.rows.map((row) => row.id),
  );
  const freedBytes = Number((await tx.query<{ bytes: number }>(BYTES, [sessionId])).rows[0].bytes);
  for (const sql of DELETES) await tx.query(sql, [sessionId]);
  await tx.charge(session.tenant, -freedBytes);
  return { sessionId, tenant: session.tenant, freedBytes };
}

/** Sessions whose latest run started (or, without runs, that were created) before `beforeMs`, newest first. */
export const STALE_SESSIONS = `SELECT s.id FROM sessions s WHERE s.tenant = $1
    AND coalesce((SELECT max(r.started_ms) FROM runs r WHERE r.session_id = s.id), s.created_ms) < $2
  ORDER BY s.created_ms DESC LIMIT $3`;
