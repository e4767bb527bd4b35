import type { DeploymentRecord, HookCallRecord, ScriptVersionRecord } from "./policy-types.js";

/*
 * The policy tables' rows as both stores read them, and their records. SQLite answers a flag column as 0/1,
 * PostgreSQL as a boolean: `flag` reads either.
 */

type Flag = number | boolean;

const flag = (value: Flag): boolean => value === true || value === 1;

export interface VersionRow {
  tenant: string;
  name: string;
  version: number;
  entry: string;
  files: string;
  bundle_hash: string;
  warnings: string;
  created_ms: number;
}

export interface DeploymentRow {
  id: string;
  tenant: string;
  number: number;
  scripts: string;
  shadow: string;
  from_config: Flag;
  previous_id: string | null;
  rollback_of: string | null;
  created_ms: number;
}

export interface HookCallRow {
  run_id: string;
  idx: number;
  call_id: string;
  hook: string;
  attempt: number;
  shadow: Flag;
  verdict: string;
  decision: string;
  payload: string | null;
}

export const toVersion = (row: VersionRow): ScriptVersionRecord => ({
  tenant: row.tenant,
  name: row.name,
  version: row.version,
  entry: row.entry,
  files: JSON.parse(row.files),
  bundleHash: row.bundle_hash,
  warnings: JSON.parse(row.warnings),
  createdMs: row.created_ms,
});

export const toDeployment = (row: DeploymentRow): DeploymentRecord => ({
  id: row.id,
  tenant: row.tenant,
  number: row.number,
  scripts: JSON.parse(row.scripts),
  shadow: JSON.parse(row.shadow),
  fromConfig: flag(row.from_config),
  ...(row.previous_id !== null ? { previousId: row.previous_id } : {}),
  ...(row.rollback_of !== null ? { rollbackOf: row.rollback_of } : {}),
  createdMs: row.created_ms,
});

export const toHookCall = (row: HookCallRow): HookCallRecord => ({
  runId: row.run_id,
  index: row.idx,
  callId: row.call_id,
  hook: row.hook,
  attempt: row.attempt,
  shadow: flag(row.shadow),
  verdict: row.verdict,
  decision: JSON.parse(row.decision),
  ...(row.payload !== null ? { payload: JSON.parse(row.payload) } : {}),
});
