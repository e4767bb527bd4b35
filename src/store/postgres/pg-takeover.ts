import { HookboxError } from "../../errors.js";
import { eventJson } from "../../events/event-json.js";
import { interruptedEvent, notResumable, resumedEvent } from "../interrupted.js";
import { rowToRun, type RunRow } from "../rows.js";
import type { ReopenOptions, RunRecord } from "../types.js";
import { violates } from "./pg-driver.js";
import type { PgTransaction } from "./pg-commit.js";
import { applyPgRunWrite } from "./pg-run-writes.js";
import { NOW_MS } from "./pg-sql.js";

/*
 * Reopening a run on PostgreSQL, in the caller's transaction: an interrupted one (a resume), or a running one
 * whose lease has expired (a takeover, which first appends the `run-interrupted` its dead owner never wrote).
 * The run's row is locked; the update takes the next epoch, so every later write of the previous owner is
 * refused, and `run-resumed {node}` follows.
 */
export async function reopenLocked(
  tx: PgTransaction,
  row: RunRow & { expired: boolean },
  options: ReopenOptions & { leaseMs: number },
): Promise<RunRecord> {
  let run = rowToRun(row);
  if (run.status === "running") {
    if (!row.expired)
      throw new HookboxError(
        "NOT_RESUMABLE",
        `run ${run.id} is running on node ${row.owner_node ?? "?"}, whose lease has not expired; only an interrupted run can be resumed`,
        { runId: run.id, status: run.status },
      );
    const reason = `node ${row.owner_node ?? "?"} stopped renewing its lease on the run (it died, stalled or lost the database)`;
    const event = interruptedEvent(run, reason);
    await applyPgRunWrite(tx, { runId: run.id, events: [{ event, json: eventJson(event) }], epoch: run.epoch ?? 0 });
    run = { ...run, status: "interrupted", lastSeq: event.seq };
  } else if (run.status !== "interrupted") {
    throw notResumable(run.id, run.status);
  }
  let updated: RunRow;
  try {
    await tx.query("SAVEPOINT hookbox_reopen");
    updated = (
      await tx.query<RunRow>(
        `UPDATE runs SET status = 'running', reason = NULL, error_code = NULL, finished_ms = NULL, owner_pid = $2,
           owner_instance = $3, iterations = $4, epoch = epoch + 1, owner_node = $5, lease_expires_ms = ${NOW_MS} + $6
         WHERE id = $1 RETURNING *`,
        [run.id, options.ownerPid, options.ownerInstance, options.iterations, options.node ?? null, options.leaseMs],
      )
    ).rows[0];
    await tx.query("RELEASE hookbox_reopen");
  } catch (error) {
    if (!violates(error, "runs_one_active")) throw error;
    await tx.query("ROLLBACK TO hookbox_reopen");
    throw new HookboxError("SESSION_BUSY", `session ${run.sessionId} already has an active run; run ${run.id} stays interrupted`, {
      sessionId: run.sessionId,
      runId: run.id,
    });
  }
  const reopened = rowToRun(updated);
  const event = resumedEvent(reopened, options);
  await applyPgRunWrite(tx, { runId: run.id, events: [{ event, json: eventJson(event) }], epoch: reopened.epoch ?? 0 });
  return { ...reopened, lastSeq: event.seq };
}

/** The run's row, locked, with whether its lease has expired by the database's clock. */
export async function lockRun(tx: PgTransaction, runId: string): Promise<(RunRow & { expired: boolean }) | undefined> {
  return (
    await tx.query<RunRow & { expired: boolean }>(
      `SELECT *, coalesce(lease_expires_ms < ${NOW_MS}, true) AS expired FROM runs WHERE id = $1 FOR UPDATE`,
      [runId],
    )
  ).rows[0];
}

/** The iterations of the run's latest snapshot (what a takeover resumes counting from). */
export async function snapshotIterations(tx: PgTransaction, runId: string): Promise<number> {
  return (
    (await tx.query<{ iterations: number }>("SELECT iterations FROM snapshots WHERE run_id = $1 ORDER BY idx DESC LIMIT 1", [runId]))
      .rows[0]?.iterations ?? 0
  );
}
