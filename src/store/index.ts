import { SqliteStore } from "./sqlite.js";
import { MemoryStore } from "./memory.js";
import type { Store } from "./types.js";

export type {
  Store,
  SessionRecord,
  RunRecord,
  SnapshotRecord,
  PauseRecord,
  SessionSummary,
  StoredRunStatus,
  RunWrite,
  RunWriteResult,
  EventWrite,
  HookCallWrite,
  SnapshotWrite,
  SnapshotInfo,
  StoredTurn,
  SessionHistory,
  TurnLayout,
  LogSegment,
  TurnPiece,
} from "./types.js";
export type {
  ScriptVersionRecord,
  ScriptSummary,
  ScriptRef,
  DeploymentRecord,
  RunDeployment,
  HookCallRecord,
  RunFilter,
} from "./policy-types.js";
export { SqliteStore } from "./sqlite.js";
export { MemoryStore } from "./memory.js";
export { LATEST_VERSION as STORE_SCHEMA_VERSION } from "./migrations.js";
export { thisProcessInstance } from "./process-alive.js";

/**
 * Opens the SQLite store at `file` (created if missing; `:memory:` for a throwaway one). Runs left
 * `running` by a process that is gone are marked `interrupted`. Throws HookboxError STORE naming the file.
 */
export function openStore(file: string): Store {
  return new SqliteStore(file);
}

/** A store that lives in this process only. */
export function openMemoryStore(): Store {
  return new MemoryStore();
}
