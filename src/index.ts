// The library's public surface. Anything not exported here is internal.
export { createTenantRuntime, type TenantRuntimeExtras } from "./host/tenant-runtime.js";
export type {
  TenantConfig,
  TenantRuntime,
  RunOptions,
  RunPersistence,
  StartRunRequest,
  ModelSpec,
  ErrorPolicy,
  RetryBounds,
} from "./host/types.js";
export { createSandboxPool } from "./sandbox/index.js";
export type { SandboxPool, SandboxLimits, ScriptSource, ScriptManifest, TenantSandbox, SandboxRun } from "./sandbox/api.js";
export type { RunHandle, RunResult, SnapshotPhase } from "./loop/handle.js";
export type { HookboxEvent, EventType } from "./events/types.js";
export type { HostTool } from "./loop/tool-registry.js";
export type { HostHooks } from "./loop/hook-provider.js";
export type { HostMiddleware } from "./loop/middleware-chain.js";
export type { RestartHandler, RestartHandlers } from "./loop/context-restart.js";
export { currentRunContext } from "./loop/ambient.js";
export { ScriptedModel, loadScriptedSteps } from "./engine/scripted.js";
export { HookboxError } from "./errors.js";
export type { Turn, Block } from "./turns/turn.js";
export * from "./turns/keys.gen.js";
export { openStore } from "./store/index.js";
export { SessionManager } from "./session/manager.js";
export { replay, loadReplayScripts, type ReplayChange, type ReplaySummary } from "./policy/replay.js";
