import type { JsonObject } from "../turns/json.js";
import type { ScriptRef } from "../host/types.js";
import type { WriteOptions } from "./quota.js";

export type { RunDeployment, ScriptRef } from "../host/types.js";

/*
 * What the policy lifecycle keeps (docs/policy-lifecycle.md): immutable script versions, the deployment
 * history of each tenant, which deployment each run used, and every hook chain's payload and verdict
 * (what replay and the shadow report read). Plain records: nothing here depends on SQLite.
 */

/** An uploaded script, immutable once stored; numbered per (tenant, name) from 1. */
export interface ScriptVersionRecord {
  tenant: string;
  name: string;
  version: number;
  entry: string;
  files: Record<string, string>;
  bundleHash: string;
  warnings: string[];
  createdMs: number;
}

/** One script of a tenant: its name, its latest version and when that was stored. */
export interface ScriptSummary {
  name: string;
  latestVersion: number;
  createdMs: number;
}

export interface DeploymentRecord {
  id: string;
  tenant: string;
  /** 1-based order within the tenant. */
  number: number;
  scripts: ScriptRef[];
  shadow: ScriptRef[];
  /** The tenant config's `scripts` (files of the serve config), not uploaded versions. */
  fromConfig: boolean;
  /** The deployment this one replaced, the target of `rollback`. */
  previousId?: string;
  /** Set when this deployment was made by a rollback: the deployment it rolled back. */
  rollbackOf?: string;
  createdMs: number;
}

/** One evaluation of a hook chain for one tool call: its input as given, and what the chain decided. */
export interface HookCallRecord {
  runId: string;
  /** Order within the run. */
  index: number;
  callId: string;
  hook: string;
  attempt: number;
  shadow: boolean;
  /** The chain's verdict: proceed, rewrite, skip, deny, ask, abort, retry, fail, default, continue, error (Verdict in src/host/types.ts). */
  verdict: string;
  /** The last script decision of the chain (what it returned, or the error). */
  decision: JsonObject;
  /** The payload the chain was given (active chains only: a shadow chain sees the same one). */
  payload?: JsonObject;
}

export interface RunFilter {
  tenant?: string;
  sessionIds?: string[];
  sinceMs?: number;
  deploymentId?: string;
}

export interface PolicyStore {
  /** Stores a new version numbered after the last one of (tenant, name); charged to the tenant's store quota. */
  createScriptVersion(version: Omit<ScriptVersionRecord, "version">, options?: WriteOptions): Promise<ScriptVersionRecord>;
  getScriptVersion(tenant: string, name: string, version: number): Promise<ScriptVersionRecord | undefined>;
  /** Versions of one script, oldest first. */
  listScriptVersions(tenant: string, name: string): Promise<ScriptVersionRecord[]>;
  /** The tenant's scripts by name (sorted), each with its latest version. */
  listScripts(tenant: string): Promise<ScriptSummary[]>;

  /**
   * Stores a deployment numbered after the tenant's last one; it becomes the tenant's current deployment. With
   * `onlyIfFirst`, only when the tenant has none yet: otherwise nothing is stored and its current one is returned,
   * in the same transaction, so processes sharing the store that make a tenant's first deployment at once make one.
   */
  createDeployment(deployment: Omit<DeploymentRecord, "number">, options?: { onlyIfFirst?: boolean }): Promise<DeploymentRecord>;
  getDeployment(tenant: string, id: string): Promise<DeploymentRecord | undefined>;
  /** The tenant's deployments, oldest first; the last is the current one. */
  listDeployments(tenant: string): Promise<DeploymentRecord[]>;
  /** The tenant's current deployment (its last), read alone: a run's start costs the same after 10 or 10,000 deployments. */
  currentDeployment(tenant: string): Promise<DeploymentRecord | undefined>;

  /** Charged to the run's tenant: over `maxTenantBytes` it is refused with STORE_QUOTA and nothing is kept. */
  recordHookCall(call: Omit<HookCallRecord, "index">, options?: WriteOptions): Promise<void>;
  /** A run's hook chain records, in order. */
  listHookCalls(runId: string): Promise<HookCallRecord[]>;
}
