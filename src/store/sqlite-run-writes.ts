import { HookboxError } from "../errors.js";
import type { SqliteStatements } from "./sqlite-statements.js";
import type { SqliteBatch } from "./sqlite-batch.js";
import type { KnownRun } from "./committed-positions.js";
import { totalsOf, usageColumns, usageDelta } from "./usage.js";
import { pauseChange } from "./pause-events.js";
import { leaseLostError, runStatusChange } from "./interrupted.js";
import { hookCallWriteBytes, ledgerRowBytes, snapshotRowBytes } from "./row-bytes.js";
import { encodeSegments, pushSegment, type LogSegment } from "./turn-layout.js";
import type { EventWrite, HookCallWrite, RunWrite, RunWriteResult, SnapshotWrite } from "./types.js";

/*
 * One RunWrite in the SQLite store, inside a group-commit transaction (in its own savepoint): the events with
 * what they derive (run status, pauses, usage ledger), journal entries, hook chain records and a snapshot,
 * then the bytes charged to the tenant in one step. Nothing is read back that the writer sent.
 */

export function applyRunWrite(statements: SqliteStatements, batch: SqliteBatch, write: RunWrite): RunWriteResult {
  const s = statements;
  const { runId } = write;
  const owner = ownerOf(s, write);
  let bytes = 0;
  const spent: ReturnType<typeof usageDelta>[] = [];
  if (write.events?.length) bytes += applyEvents(s, batch, runId, owner.tenant, write.events, spent, write.epoch);
  else if (write.epoch !== undefined) checkEpoch(s, batch, runId, write.epoch);
  for (const result of write.toolResults ?? []) {
    s.recordToolResult.run(runId, result.callId, result.blockJson);
    bytes += result.blockJson.length;
  }
  if (write.hookCalls?.length) bytes += applyHookCalls(s, batch, runId, write.hookCalls);
  let result: RunWriteResult = {};
  if (write.snapshot) {
    const written = applySnapshot(s, batch, runId, owner.sessionId, write.snapshot);
    bytes += written.bytes;
    result = { snapshot: { index: write.snapshot.index, segments: written.segments } };
  }
  batch.charge(owner.tenant, bytes, write.maxTenantBytes);
  for (const delta of spent) if (delta) batch.addUsage(owner.tenant, delta);
  return result;
}

function ownerOf(s: SqliteStatements, write: RunWrite): { sessionId: string; tenant: string } {
  if (write.sessionId !== undefined && write.tenant !== undefined) return { sessionId: write.sessionId, tenant: write.tenant };
  const row = s.runOwner.get(write.runId) as { session_id: string; tenant: string } | undefined;
  if (!row) throw new HookboxError("STORE", `unknown run ${write.runId}`, { runId: write.runId });
  return { sessionId: row.session_id, tenant: row.tenant };
}

/** Consecutive events after the committed seq; returns their bytes (events and ledger rows). */
function applyEvents(
  s: SqliteStatements,
  batch: SqliteBatch,
  runId: string,
  tenant: string,
  events: EventWrite[],
  spent: ReturnType<typeof usageDelta>[],
  epoch: number | undefined,
): number {
  const first = events[0].event;
  const last = events[events.length - 1].event;
  events.forEach(({ event }, i) => {
    if (event.seq !== first.seq + i)
      throw new HookboxError("STORE", `events of one write must be consecutive (seq ${event.seq})`, { runId });
  });
  const finished = events.filter(({ event }) => event.type === "inference-finished").length;
  const deltas = events.map(({ event }) => usageDelta(event));
  const run = totalsOf(deltas.filter((delta) => delta !== undefined));
  const advanced = s.advanceSeq.run(
    last.seq,
    finished,
    first.inferenceId,
    runId,
    first.seq - 1,
    epoch ?? null,
    run.inputTokens,
    run.outputTokens,
    run.costUsd,
  );
  if (advanced.changes !== 1) {
    const row = readRun(s, batch, runId);
    if (epoch !== undefined && row.epoch !== epoch) throw leaseLostError(runId, epoch, row.epoch);
    throw new HookboxError("STORE", `event seq ${first.seq} does not follow committed seq ${row.lastSeq} of run ${runId}`, {
      runId,
      seq: first.seq,
    });
  }
  // The update found the run by id just now: its number is the one this process learnt, or read once.
  const num = batch.knownRun(runId)?.num ?? batch.numbers.get(runId) ?? runNumber(s, batch, runId);
  batch.learnRun(runId, { lastSeq: last.seq, num, ...(epoch === undefined ? {} : { epoch }) });
  let bytes = 0;
  for (const [i, { event, json }] of events.entries()) {
    s.insertEvent.run(num, event.seq, event.type, json);
    const delta = deltas[i];
    bytes += json.length + ledgerRowBytes(delta);
    if (delta) {
      s.insertUsage.run(tenant, event.timestampMs, runId, event.seq, ...usageColumns(delta));
      spent.push(delta);
    }
    const pause = pauseChange(event);
    if (pause?.open) {
      const { pauseId, phase, deadlineMs, pending, openedMs } = pause.open;
      s.openPause.run(pauseId, runId, phase, deadlineMs, JSON.stringify(pending), openedMs);
    } else if (pause?.close) {
      s.closePause.run(pause.close.reason, pause.close.pauseId, runId);
    } else {
      const change = runStatusChange(event);
      if (!change) continue;
      s.closeAllPauses.run(event.type, runId);
      batch.endRun(runId);
      s.finishRun.run(change.status, change.reason ?? null, change.errorCode ?? null, change.iterations, change.finishedMs, runId);
    }
  }
  return bytes;
}

/** Hook chain records: they follow the run's seq as the write leaves it (known from its events or read once). Returns their bytes. */
function applyHookCalls(s: SqliteStatements, batch: SqliteBatch, runId: string, calls: HookCallWrite[]): number {
  const { num, lastSeq } = batch.knownRun(runId) ?? readRun(s, batch, runId);
  let bytes = 0;
  for (const call of calls) {
    s.insertHookCall.run(
      num,
      lastSeq,
      call.callId,
      call.hook,
      call.attempt,
      call.shadow ? 1 : 0,
      call.verdict,
      call.decisionJson,
      call.payloadJson ?? null,
    );
    bytes += hookCallWriteBytes(call);
  }
  return bytes;
}

function runNumber(s: SqliteStatements, batch: SqliteBatch, runId: string): number {
  const { num } = s.runNumber.get(runId) as { num: number };
  batch.numbers.set(runId, num);
  return num;
}

/** Refuses the write (LEASE_LOST) when the run has moved on to a later epoch than the writer's. */
function checkEpoch(s: SqliteStatements, batch: SqliteBatch, runId: string, epoch: number): void {
  if (batch.knownRun(runId)?.epoch === epoch) return;
  const row = readRun(s, batch, runId);
  if (row.epoch !== epoch) throw leaseLostError(runId, epoch, row.epoch);
}

/** The run's committed seq, epoch and number, read once per transaction (STORE when there is no such run). */
function readRun(s: SqliteStatements, batch: SqliteBatch, runId: string): Required<KnownRun> {
  const row = s.runPosition.get(runId) as { last_seq: number; epoch: number; num: number } | undefined;
  if (!row) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
  const known = { lastSeq: row.last_seq, epoch: row.epoch, num: row.num };
  batch.numbers.set(runId, row.num);
  batch.learnRun(runId, known);
  return known;
}

/** A snapshot: its new blocks appended to the session's log, then its layout. Refused unless the run is at its lastSeq. */
function applySnapshot(
  s: SqliteStatements,
  batch: SqliteBatch,
  runId: string,
  sessionId: string,
  snapshot: SnapshotWrite,
): { bytes: number; segments: LogSegment[] } {
  // The write's own events (applied just before) or an earlier write of this transaction say where the run is.
  const { lastSeq: committedSeq, num } = batch.knownRun(runId) ?? readRun(s, batch, runId);
  if (committedSeq !== snapshot.lastSeq)
    throw new HookboxError(
      "STORE",
      `the ${snapshot.phase} snapshot of run ${runId} follows event ${snapshot.lastSeq}, but the run's committed seq is ${committedSeq}`,
      { runId },
    );
  let appended = 0;
  for (const piece of snapshot.pieces) if ("append" in piece) appended += piece.append.length;
  let next = appended > 0 ? (batch.logEnd(sessionId) ?? (s.nextLogPosition.get(sessionId) as { next: number }).next) : 0;
  let bytes = 0;
  const segments: LogSegment[] = [];
  for (const piece of snapshot.pieces) {
    if ("segment" in piece) {
      pushSegment(segments, piece.segment);
      continue;
    }
    const from = next;
    for (const text of piece.append) {
      s.insertLogBlock.run(sessionId, next++, text);
      bytes += text.length;
    }
    pushSegment(segments, { session: sessionId, from, to: next });
  }
  if (appended > 0) batch.setLogEnd(sessionId, next);
  const layout = encodeSegments(segments, sessionId);
  const head = snapshot.headJson ?? null;
  s.insertSnapshot.run(
    num,
    snapshot.index,
    snapshot.phase,
    layout,
    head,
    snapshot.blockBytes,
    snapshot.lastSeq,
    snapshot.iterations,
    snapshot.createdMs,
  );
  return { bytes: bytes + snapshotRowBytes(layout, snapshot.headJson), segments };
}
