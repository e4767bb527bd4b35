import type { PauseRecord, RunRecord, SessionRecord, StoredRunStatus } from "./types.js";

/*
 * Row shapes of the sessions, runs and pauses tables as both stores read them, their records, and a new run's
 * insert values.
 */

export interface SessionRow {
  id: string;
  tenant: string;
  tenant_config: string;
  defaults: string;
  created_ms: number;
  forked_from: string | null;
  initial_turn: string | null;
}

export interface RunRow {
  id: string;
  session_id: string;
  inference_id: string;
  prompt: string;
  options: string;
  status: string;
  reason: string | null;
  error_code: string | null;
  iterations: number;
  started_ms: number;
  finished_ms: number | null;
  last_seq: number;
  owner_pid: number | null;
  /** Added by migration 6 (null on runs stored before it). */
  owner_instance?: string | null;
  /** Added by migration 2 (null on runs stored before it). */
  deployment?: string | null;
  /** Added by migration 8 (0 on runs stored before it). */
  epoch?: number;
  /** PostgreSQL only: the owning node and when its lease runs out. */
  owner_node?: string | null;
  lease_expires_ms?: number | null;
}

export interface PauseRow {
  pause_id: string;
  run_id: string;
  phase: string;
  deadline_ms: number;
  pending: string;
  opened_ms: number;
}

export function rowToSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    tenant: row.tenant,
    tenantConfig: JSON.parse(row.tenant_config),
    defaults: JSON.parse(row.defaults),
    createdMs: row.created_ms,
    ...(row.forked_from ? { forkedFrom: JSON.parse(row.forked_from) } : {}),
  };
}

/**
 * A new run's values in the order both stores insert them (id, session_id, inference_id, prompt, options, status,
 * iterations, started_ms, last_seq, owner_pid, owner_instance, deployment, deployment_id); `optionsJson` is
 * run.options as the caller already serialized it (it charges those bytes).
 */
export function runInsertValues(run: RunRecord, optionsJson: string): (string | number | null)[] {
  return [
    run.id,
    run.sessionId,
    run.inferenceId,
    run.prompt,
    optionsJson,
    run.status,
    run.iterations,
    run.startedMs,
    run.lastSeq,
    run.ownerPid ?? null,
    run.ownerInstance ?? null,
    run.deployment ? JSON.stringify(run.deployment) : null,
    run.deployment?.id ?? null,
  ];
}

export function rowToRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    inferenceId: row.inference_id,
    prompt: row.prompt,
    options: JSON.parse(row.options),
    status: row.status as StoredRunStatus,
    ...(row.reason !== null ? { reason: row.reason } : {}),
    ...(row.error_code !== null ? { errorCode: row.error_code } : {}),
    iterations: row.iterations,
    startedMs: row.started_ms,
    ...(row.finished_ms !== null ? { finishedMs: row.finished_ms } : {}),
    lastSeq: row.last_seq,
    ...(row.owner_pid !== null ? { ownerPid: row.owner_pid } : {}),
    ...(row.owner_instance ? { ownerInstance: row.owner_instance } : {}),
    ...(row.deployment ? { deployment: JSON.parse(row.deployment) } : {}),
    epoch: row.epoch ?? 0,
    ...(row.owner_node ? { ownerNode: row.owner_node } : {}),
    ...(row.lease_expires_ms !== undefined && row.lease_expires_ms !== null ? { leaseExpiresMs: row.lease_expires_ms } : {}),
  };
}

export function rowToPause(row: PauseRow): PauseRecord {
  return {
    pauseId: row.pause_id,
    runId: row.run_id,
    phase: row.phase,
    deadlineMs: row.deadline_ms,
    pendingToolCalls: JSON.parse(row.pending),
    openedMs: row.opened_ms,
  };
}
