/*
 * The library's public surface (`import { ... } from "hookbox"`), described in docs/library.md. Anything not
 * exported here is internal and may change without notice. Only factories, interfaces and the few classes a
 * host constructs or catches (SessionManager, ScriptedModel, HookboxError) are exported: implementation classes
 * stay behind interfaces.
 */

// First: on an unsupported Node, loading the library throws the CLI's one line before anything else runs
// (scripts/build.mjs keeps this import a separate module, evaluated before every other one).
import "../bin/node-support.js";

// Running loops for one tenant.
export { createTenantRuntime, type TenantRuntimeExtras } from "./host/tenant-runtime.js";
export type { ProviderTools } from "./engine/infer.js";
export type { ModelSettingsInput, UserContextToModel } from "./engine/model-settings.js";
export type { DeploymentScripts } from "./host/tenant-runtime.js";
export type { ResolveHost, ResolvedAddress } from "./capabilities/egress-connect.js";
export type {
  TenantConfig,
  TenantRuntime,
  RunOptions,
  ContextOptions,
  RunPersistence,
  StartRunRequest,
  ModelSpec,
  ErrorPolicy,
  RetryBounds,
  RunBudgets,
  ChainVerdict,
  Verdict,
  ScriptRef,
} from "./host/types.js";
export type { RunHandle, RunResult, SnapshotPhase } from "./host/types.js";

// Trusted host code given in-process.
export type { HostModule } from "./host/host-module.js";
export type { ApprovalAnswer, AnswerResult, OpenApproval } from "./host/types.js";
export type { HostTool } from "./loop/tool-registry.js";
export type { HostHooks, MaybePromise } from "./loop/hook-provider.js";
export type {
  HookReturns,
  BeforeToolCallReturn,
  AfterToolCallReturn,
  OnToolErrorReturn,
  BeforeRunReturn,
  BeforeFinishReturn,
} from "./contracts/hook-returns.js";
export type { HostMiddleware, Next } from "./loop/middleware-chain.js";
export type { RestartHandler, RestartHandlers } from "./loop/context-restart.js";
export { currentRunContext } from "./loop/ambient.js";
export type {
  CommonContext,
  MiddlewareContext,
  ToolContext,
  ToolCallRef,
  ToolErrorInfo,
  RunIds,
  HookPayload,
  HookPayloadBase,
  ToolHookPayload,
  BeforeToolCallPayload,
  AfterToolCallPayload,
  OnToolErrorPayload,
  BeforeRunPayload,
  BeforeFinishPayload,
  UserContext,
  Tags,
  Budget,
  CodeOrigin,
} from "./contracts/context.js";
export type { Pricing, ModelPricing, RunUsage, TokenUsage } from "./host/usage.js";

// The sandbox that runs tenants' scripts.
export {
  createSandboxPool,
  type SandboxPoolOptions,
  type SupervisedSandboxPool,
  type WorkerInfo,
  type PoolStats,
} from "./sandbox/index.js";
export type { WallMode } from "./sandbox/wall/mode.js";
export type { WallKind } from "./sandbox/wall/launcher.js";
export type {
  SandboxPool,
  SandboxLimits,
  ScriptSource,
  ScriptManifest,
  ScriptToolManifest,
  TenantSandbox,
  SandboxRun,
  LogEntry,
  OnHookError,
  Isolation,
  TenantSandboxOptions,
  UploadedFiles,
  OpenRunOptions,
  CapabilityBroker,
  BundleVariant,
} from "./sandbox/api.js";

// Capabilities: what scripts may reach through ctx.fetch, ctx.kv, ctx.model (docs/capabilities.md).
export type { CapabilityGrants, CapabilityLimits, EgressEntry, EgressHeader } from "./capabilities/grants.js";
export type { KvStore, KvPage, KvSetOptions, KvListOptions } from "./store/kv.js";

// Sessions and their store.
export {
  SessionManager,
  type SessionListing,
  type SessionManagerOptions,
  type SessionStatus,
  type SessionView,
} from "./session/manager.js";
export type { HistoryCacheLimits } from "./session/histories.js";
export type { EventReaderOptions, LiveDeltaText } from "./session/read-events.js";
// SessionOwner is marked @internal: the published declarations leave it out with Session's constructor.
export type { Session, CreateSessionOptions, SessionOwner } from "./session/session.js";
export {
  openStore,
  openMemoryStore,
  openPostgresStore,
  openStoreAt,
  STORE_SCHEMA_VERSION,
  type PostgresStoreOptions,
} from "./store/open.js";
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
  RunSearch,
  PageOptions,
  StoredEventText,
  StoredSnapshotText,
  TenantUsage,
  SessionFilter,
  TenantPauseRecord,
  TenantRunQuery,
  DeletedSession,
  ReopenOptions,
  CreateRunOptions,
} from "./store/types.js";
export type { ClusterStore, RunControl, ControlReply, HeldRun } from "./store/cluster.js";
export type { WriteOptions } from "./store/quota.js";
export type { UsageTotals } from "./store/usage.js";

// Traces (OpenTelemetry, when an OTLP endpoint is set).
export { shutdownTracing } from "./telemetry/tracing.js";

// Events, models, errors, turns.
export type {
  HookboxEvent,
  EventBase,
  EventBody,
  EventType,
  FinalStatus,
  CapabilityEvent,
  TextDeltaEvent,
  LiveEvent,
  ApprovalDecision,
  CallSummary,
  ContextTrim,
} from "./events/types.js";
export type { ModelRetry } from "./loop/model-call.js";
export { ScriptedModel, loadScriptedSteps, type ScriptedStep, type ScriptedModelOptions } from "./engine/scripted.js";
export { HookboxError, isHookboxError, type HostErrorCode, type SerializedError } from "./errors.js";
export type { Turn, Block } from "./turns/turn.js";
export type { Json, JsonObject } from "./turns/json.js";
export * from "./turns/keys.gen.js";
export type { TypedKey, KeyFamily, KeyLookup } from "./turns/typed-key.js";

// Policy lifecycle: replay of recorded hook calls (docs/policy-lifecycle.md).
export {
  replay,
  loadReplayScripts,
  type ReplayChange,
  type ReplaySummary,
  type ReplayScripts,
  type ReplayStop,
  type ReplayBounds,
} from "./policy/replay.js";
export type {
  ScriptVersionRecord,
  DeploymentRecord,
  RunDeployment,
  HookCallRecord,
  RunFilter,
  PolicyStore,
  ScriptSummary,
} from "./store/policy-types.js";
