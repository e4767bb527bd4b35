import type { Json, JsonObject } from "../turns/json.js";
import type { Turn } from "../turns/turn.js";
import type { HookName } from "../turns/keys.gen.js";
import type { HookReturns } from "../contracts/hook-returns.js";
import type { HookPayload, MiddlewareContext, ToolContext } from "../contracts/context.js";

/*
 * The host-side surface of the sandbox: what the tool loop (src/loop) uses. Everything behind it
 * (worker processes, isolates, the in-isolate runtime, limits) is the sandbox's business.
 * All methods reject with HookboxError carrying a contract error code (SANDBOX_TIMEOUT, SANDBOX_MEMORY,
 * SANDBOX_CRASHED, SCRIPT_ERROR, HOOK_CONTRACT, SCRIPT_LOAD, SANDBOX_OVERLOADED).
 */

export interface SandboxLimits {
  /** Isolate memory limit per tenant, MB (default 64). */
  memoryMb: number;
  /** CPU time per callback, ms (default 200). */
  cpuMs: number;
  /** Wall time per callback, ms, excluding time spent awaiting the host (default 5000). */
  wallMs: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { memoryMb: 64, cpuMs: 200, wallMs: 5000 };

/**
 * A script to load: a file (TS or JS, relative imports and pure-JS npm deps bundled), source text, or an
 * uploaded file map (bundled from the map alone: src/sandbox/files-bundler.ts).
 */
export type ScriptSource = { path: string } | { source: string; filename: string } | UploadedFiles;

/** Files uploaded as one script version: relative POSIX paths to source text; `entry` is one of them. */
export interface UploadedFiles {
  files: Record<string, string>;
  entry: string;
  /** How messages name the script (e.g. `policy@v3`). */
  label: string;
}

/**
 * A variant of a script's bundle (trusted host code: `hookbox test` counts coverage and pins the clock with one).
 * Each rewrite must keep every line where it was (insert no line breaks), so stack traces and the source map
 * still point at the author's lines.
 */
export interface BundleVariant {
  /** Tells variants apart in the bundler's cache: one key, one way of rewriting. */
  key: string;
  /** Rewrites each of the script's own files as the bundler reads it (not files under node_modules). */
  source?: (file: { path: string; text: string }) => string;
  /** Rewrites the bundler's output (the script's iife) before the sandbox wraps it. */
  bundle?: (js: string) => string;
}

export type OnHookError = "fail-closed" | "fail-open" | "abort-run";

export interface ScriptToolManifest {
  name: string;
  description: string;
  parameters: JsonObject;
}

/** The validated shape of a script's `defineScript({...})` default export. */
export interface ScriptManifest {
  /** Script name (`name`, or the file name without extension). Unique within a tenant's loaded set. */
  name: string;
  onHookError: OnHookError;
  /** Middleware names in declaration order. */
  middleware: string[];
  tools: ScriptToolManifest[];
  hooks: HookName[];
  /** Content hash of the bundle (cache key; also what a store records to reload the script). */
  bundleHash: string;
}

export interface LogEntry {
  script: string;
  tenant: string;
  level: "debug" | "info" | "warn" | "error";
  message: string;
}

/** How a tenant's isolates share worker processes (docs/sandbox.md, "Tenants apart"). */
export type Isolation = "shared" | "process-per-tenant";

export interface TenantSandboxOptions {
  /** "process-per-tenant": the tenant's isolates never share a worker process with another tenant's (default: the pool's). */
  isolation?: Isolation;
  /**
   * The tier the operator puts the tenant in (e.g. "free", "paid", "trusted"; default "default"): tenants of two
   * cordons never share a worker process, so a worker taken over reaches only tenants of its own cordon.
   */
  cordon?: string;
  /**
   * The tenant a sandbox belongs to when its name is not the tenant's own (a deployment's, a replay's or an
   * upload check's sandbox; default: its own name). The sandboxes of one owner share its
   * standing: a breach in any of them quarantines them all, and a new one starts quarantined when its owner
   * is. Set when the sandbox is created.
   */
  owner?: string;
}

export interface SandboxPool {
  /** The sandbox of one tenant (created on first use; the same object afterwards; given options update it). */
  tenant(name: string, limits?: Partial<SandboxLimits>, options?: TenantSandboxOptions): TenantSandbox;
  /** Forgets a tenant's sandbox and disposes its isolate (a throwaway one, e.g. for checking an upload). */
  drop?(name: string): void;
  close(): Promise<void>;
}

export interface TenantSandbox {
  readonly tenant: string;
  /**
   * Bundles (cached by content hash), evaluates and validates scripts. Rejects with SCRIPT_LOAD. With `variant`,
   * the scripts load as that variant of their bundles (files on disk and source text; uploads load as they are),
   * each under its own bundle hash.
   */
  load(sources: ScriptSource[], options?: { variant?: BundleVariant }): Promise<ScriptManifest[]>;
  /** A fresh context per loaded script for one run: globals a run changes never reach another run. */
  openRun(options: OpenRunOptions): Promise<SandboxRun>;
}

export interface OpenRunOptions {
  runId: string;
  scripts: ScriptManifest[];
  onLog?: (entry: LogEntry) => void;
  /** Serves the run's `ctx.fetch`, `ctx.kv`, `ctx.model` (src/capabilities); without it they are refused. */
  capabilities?: CapabilityBroker;
}

/**
 * The host side of script capabilities for one run. `text` is the script's request as JSON text made in
 * the isolate (untrusted: the broker validates it); resolves with a JSON value for the script or rejects
 * with a HookboxError whose code and message the script sees.
 */
export interface CapabilityBroker {
  serve(request: { script: string; text: string }): Promise<Json>;
}

export interface SandboxRun {
  /** Runs one middleware; `next` runs the rest of the chain (host side). Resolves with the validated turn. */
  callMiddleware(
    script: string,
    middleware: string,
    turn: Turn,
    ctx: MiddlewareContext,
    next: (turn: Turn) => Promise<Turn>,
  ): Promise<Turn>;
  /** Runs a script tool's handler; resolves with its JSON result. */
  callTool(script: string, tool: string, args: JsonObject, ctx: ToolContext, limits?: { maxResultBytes?: number }): Promise<Json>;
  /** Runs a lifecycle hook; resolves with its return value validated against the hook's contract. */
  callHook<H extends HookName>(script: string, hook: H, payload: HookPayload): Promise<HookReturns[H]>;
  /** Guest CPU time this run's callbacks used so far, ms (as the worker measured it). */
  cpuMs(): number;
  /**
   * What the run's script contexts counted so far when their bundles were instrumented for coverage
   * (a `BundleVariant`): each context's JSON text, guest data ("null" for a bundle that counts nothing).
   */
  coverage(): Promise<{ script: string; text: string }[]>;
  close(): Promise<void>;
}
