import { HookboxError } from "../../errors.js";
import { usageDelta, type UsageDelta } from "../usage.js";
import { pauseChange } from "../pause-events.js";
import { leaseLostError, runStatusChange } from "../interrupted.js";
import { hookCallWriteBytes, ledgerRowBytes, snapshotRowBytes } from "../row-bytes.js";
import { encodeSegments, pushSegment, type LogSegment } from "../turn-layout.js";
import type { EventWrite, RunWrite, RunWriteResult, SnapshotWrite } from "../types.js";
import type { PgTransaction } from "./pg-commit.js";

/*
 * One RunWrite in the PostgreSQL store, inside a group-commit transaction: the same steps as the SQLite store
 * (src/store/sqlite-run-writes.ts), a few statements each carrying many rows. Every write of a run that carries
 * an epoch is fenced on the run's row: the events' conditional update, or a shared row lock, so a takeover
 * (which updates that row) and a stale owner's write are serialized and the stale one is refused.
 */

export async function applyPgRunWrite(tx: PgTransaction, write: RunWrite): Promise<RunWriteResult> {
  const { runId } = write;
  const owner = await ownerOf(tx, write);
  let bytes = 0;
  const spent: UsageDelta[] = [];
  if (write.events?.length) bytes += await applyEvents(tx, runId, owner.tenant, write.events, spent, write.epoch);
  else if (write.epoch !== undefined) await checkEpoch(tx, runId, write.epoch, true);
  const results = write.toolResults ?? [];
  if (results.length > 0) {
    await tx.query(
      `INSERT INTO tool_results (run_id, call_id, block) SELECT $1, * FROM unnest($2::text[], $3::text[])
       ON CONFLICT (run_id, call_id) DO UPDATE SET block = excluded.block`,
      [runId, results.map((r) => r.callId), results.map((r) => r.blockJson)],
    );
    for (const result of results) bytes += result.blockJson.length;
  }
  const calls = write.hookCalls ?? [];
  if (calls.length > 0) {
    await tx.query(
      `INSERT INTO hook_calls (run_id, idx, call_id, hook, attempt, shadow, verdict, decision, payload)
       SELECT $1, (SELECT coalesce(max(idx), 0) FROM hook_calls WHERE run_id = $1) + n, c, h, a, s, v, d, p
       FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::boolean[], $7::text[], $8::text[], $9::text[]) AS x(n, c, h, a, s, v, d, p)`,
      [
        runId,
        calls.map((_, i) => i + 1),
        calls.map((c) => c.callId),
        calls.map((c) => c.hook),
        calls.map((c) => c.attempt),
        calls.map((c) => c.shadow),
        calls.map((c) => c.verdict),
        calls.map((c) => c.decisionJson),
        calls.map((c) => c.payloadJson ?? null),
      ],
    );
    for (const call of calls) bytes += hookCallWriteBytes(call);
  }
  let result: RunWriteResult = {};
  if (write.snapshot) {
    const written = await applySnapshot(tx, runId, owner.sessionId, write.snapshot, write.events?.at(-1)?.event.seq);
    bytes += written.bytes;
    result = { snapshot: { index: write.snapshot.index, segments: written.segments } };
  }
  await tx.charge(owner.tenant, bytes, write.maxTenantBytes);
  for (const delta of spent) tx.addUsage(owner.tenant, delta);
  if (write.events?.length) tx.notifyRun(runId);
  return result;
}

async function ownerOf(tx: PgTransaction, write: RunWrite): Promise<{ sessionId: string; tenant: string }> {
  if (write.sessionId !== undefined && write.tenant !== undefined) return { sessionId: write.sessionId, tenant: write.tenant };
  const row = (
    await tx.query<{ session_id: string; tenant: string }>(
      "SELECT r.session_id, s.tenant FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = $1",
      [write.runId],
    )
  ).rows[0];
  if (!row) throw new HookboxError("STORE", `unknown run ${write.runId}`, { runId: write.runId });
  return { sessionId: row.session_id, tenant: row.tenant };
}

/** Refuses the write (LEASE_LOST) when the run has a later epoch; `lock` holds the row until the commit. */
async function checkEpoch(tx: PgTransaction, runId: string, epoch: number, lock: boolean): Promise<void> {
  const row = (await tx.query<{ epoch: number }>(`SELECT epoch FROM runs WHERE id = $1${lock ? " FOR SHARE" : ""}`, [runId])).rows[0];
  if (!row) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
  if (row.epoch !== epoch) throw leaseLostError(runId, epoch, row.epoch);
}

/** Consecutive events after the committed seq (one conditional update), with what they derive; returns their bytes. */
async function applyEvents(
  tx: PgTransaction,
  runId: string,
  tenant: string,
  events: EventWrite[],
  spent: UsageDelta[],
  epoch: number | undefined,
): Promise<number> {
  const first = events[0].event;
  const last = events[events.length - 1].event;
  events.forEach(({ event }, i) => {
    if (event.seq !== first.seq + i)
      throw new HookboxError("STORE", `events of one write must be consecutive (seq ${event.seq})`, { runId });
  });
  const finished = events.filter(({ event }) => event.type === "inference-finished").length;
  const advanced = await tx.query(
    `UPDATE runs SET last_seq = $1, iterations = iterations + $2,
       inference_id = CASE WHEN inference_id = '' THEN $3 ELSE inference_id END
     WHERE id = $4 AND last_seq = $5 AND ($6::int IS NULL OR epoch = $6::int)`,
    [last.seq, finished, first.inferenceId, runId, first.seq - 1, epoch ?? null],
  );
  if (advanced.rowCount !== 1) {
    if (epoch !== undefined) await checkEpoch(tx, runId, epoch, false);
    const row = (await tx.query<{ last_seq: number }>("SELECT last_seq FROM runs WHERE id = $1", [runId])).rows[0];
    throw new HookboxError(
      "STORE",
      row ? `event seq ${first.seq} does not follow committed seq ${row.last_seq} of run ${runId}` : `unknown run ${runId}`,
      { runId, seq: first.seq },
    );
  }
  await tx.query("INSERT INTO events (run_id, seq, type, body) SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[])", [
    runId,
    events.map(({ event }) => event.seq),
    events.map(({ event }) => event.type),
    events.map(({ json }) => json),
  ]);
  let bytes = 0;
  const ledger: { atMs: number; delta: UsageDelta }[] = [];
  for (const { event, json } of events) {
    const delta = usageDelta(event);
    bytes += json.length + ledgerRowBytes(delta);
    if (delta) {
      ledger.push({ atMs: event.timestampMs, delta });
      spent.push(delta);
    }
    const pause = pauseChange(event);
    if (pause?.open) {
      const { pauseId, phase, deadlineMs, pending, openedMs } = pause.open;
      await tx.query(
        `INSERT INTO pauses (pause_id, run_id, phase, deadline_ms, pending, opened_ms) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (pause_id) DO UPDATE SET run_id = excluded.run_id, phase = excluded.phase, deadline_ms = excluded.deadline_ms,
           pending = excluded.pending, opened_ms = excluded.opened_ms, closed_reason = NULL`,
        [pauseId, runId, phase, deadlineMs, JSON.stringify(pending), openedMs],
      );
    } else if (pause?.close) {
      await tx.query("UPDATE pauses SET closed_reason = $1 WHERE pause_id = $2 AND run_id = $3", [
        pause.close.reason,
        pause.close.pauseId,
        runId,
      ]);
    } else {
      const change = runStatusChange(event);
      if (!change) continue;
      await tx.query("UPDATE pauses SET closed_reason = $1 WHERE run_id = $2 AND closed_reason IS NULL", [event.type, runId]);
      await tx.query(
        `UPDATE runs SET status = $1, reason = $2, error_code = $3, iterations = $4, finished_ms = $5,
           owner_pid = NULL, owner_instance = NULL, owner_node = NULL, lease_expires_ms = NULL WHERE id = $6`,
        [change.status, change.reason ?? null, change.errorCode ?? null, change.iterations, change.finishedMs, runId],
      );
    }
  }
  if (ledger.length > 0) {
    const column = (pick: (delta: UsageDelta) => number) => ledger.map((row) => pick(row.delta));
    await tx.query(
      `INSERT INTO usage_ledger (tenant, run_id, at_ms, runs, inferences, input_tokens, output_tokens, cost_usd, tool_calls, sandbox_cpu_ms)
       SELECT $1, $2, * FROM unnest($3::bigint[], $4::int[], $5::int[], $6::bigint[], $7::bigint[], $8::float8[], $9::int[], $10::float8[])`,
      [
        tenant,
        runId,
        ledger.map((row) => row.atMs),
        column((d) => d.runs),
        column((d) => d.inferences),
        column((d) => d.inputTokens),
        column((d) => d.outputTokens),
        column((d) => d.costUsd),
        column((d) => d.toolCalls),
        column((d) => d.sandboxCpuMs),
      ],
    );
  }
  return bytes;
}

/** A snapshot: its new blocks appended to the session's log (positions from the session's row), then its layout. */
async function applySnapshot(
  tx: PgTransaction,
  runId: string,
  sessionId: string,
  snapshot: SnapshotWrite,
  seqOfThisWrite: number | undefined,
): Promise<{ bytes: number; segments: LogSegment[] }> {
  const committedSeq =
    seqOfThisWrite ?? (await tx.query<{ last_seq: number }>("SELECT last_seq FROM runs WHERE id = $1", [runId])).rows[0]?.last_seq;
  if (committedSeq === undefined) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
  if (committedSeq !== snapshot.lastSeq)
    throw new HookboxError(
      "STORE",
      `the ${snapshot.phase} snapshot of run ${runId} follows event ${snapshot.lastSeq}, but the run's committed seq is ${committedSeq}`,
      { runId },
    );
  const appended: string[] = [];
  for (const piece of snapshot.pieces) if ("append" in piece) appended.push(...piece.append);
  let next = 0;
  if (appended.length > 0) {
    const grown = await tx.query<{ log_length: number }>(
      "UPDATE sessions SET log_length = log_length + $1 WHERE id = $2 RETURNING log_length",
      [appended.length, sessionId],
    );
    next = grown.rows[0].log_length - appended.length;
    await tx.query("INSERT INTO session_log (session_id, pos, block) SELECT $1, * FROM unnest($2::int[], $3::text[])", [
      sessionId,
      appended.map((_, i) => next + i),
      appended,
    ]);
  }
  let bytes = 0;
  const segments: LogSegment[] = [];
  for (const piece of snapshot.pieces) {
    if ("segment" in piece) {
      pushSegment(segments, piece.segment);
      continue;
    }
    pushSegment(segments, { session: sessionId, from: next, to: next + piece.append.length });
    next += piece.append.length;
    for (const text of piece.append) bytes += text.length;
  }
  const layout = encodeSegments(segments, sessionId);
  await tx.query(
    `INSERT INTO snapshots (run_id, idx, phase, blocks, head, block_bytes, last_seq, iterations, created_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      runId,
      snapshot.index,
      snapshot.phase,
      layout,
      snapshot.headJson ?? null,
      snapshot.blockBytes,
      snapshot.lastSeq,
      snapshot.iterations,
      snapshot.createdMs,
    ],
  );
  return { bytes: bytes + snapshotRowBytes(layout, snapshot.headJson), segments };
}
