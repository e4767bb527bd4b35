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
  SessionHistoryOptions,
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
export { openStore, openMemoryStore, openPostgresStore, openStoreAt, STORE_SCHEMA_VERSION, type PostgresStoreOptions } from "./open.js";
export type { ClusterStore, RunControl, ControlReply, HeldRun } from "./cluster.js";
export { thisProcessInstance } from "./process-alive.js";
