import type { RunRecord, RunSearch } from "./types.js";
import type { DeploymentRecord, HookCallRecord, PolicyStore, RunFilter, ScriptSummary, ScriptVersionRecord } from "./policy-types.js";
import type { WriteOptions } from "./quota.js";

/** Policy tables: the PolicyStore half of a store but its hook chain records, which are run writes (store-base.ts). */
export type PolicyTables = Omit<PolicyStore, "recordHookCall"> & RunSearch;

/** The PolicyStore half of a store, served by its policy tables (sqlite-policy.ts, memory-policy.ts). */
export abstract class WithPolicyTables implements PolicyTables {
  protected abstract readonly policy: PolicyTables;

  createScriptVersion(version: Omit<ScriptVersionRecord, "version">, options?: WriteOptions): Promise<ScriptVersionRecord> {
    return this.policy.createScriptVersion(version, options);
  }
  getScriptVersion(tenant: string, name: string, version: number): Promise<ScriptVersionRecord | undefined> {
    return this.policy.getScriptVersion(tenant, name, version);
  }
  listScriptVersions(tenant: string, name: string): Promise<ScriptVersionRecord[]> {
    return this.policy.listScriptVersions(tenant, name);
  }
  listScripts(tenant: string): Promise<ScriptSummary[]> {
    return this.policy.listScripts(tenant);
  }
  createDeployment(deployment: Omit<DeploymentRecord, "number">, options?: { onlyIfFirst?: boolean }): Promise<DeploymentRecord> {
    return this.policy.createDeployment(deployment, options);
  }
  getDeployment(tenant: string, id: string): Promise<DeploymentRecord | undefined> {
    return this.policy.getDeployment(tenant, id);
  }
  listDeployments(tenant: string): Promise<DeploymentRecord[]> {
    return this.policy.listDeployments(tenant);
  }
  currentDeployment(tenant: string): Promise<DeploymentRecord | undefined> {
    return this.policy.currentDeployment(tenant);
  }
  listHookCalls(runId: string): Promise<HookCallRecord[]> {
    return this.policy.listHookCalls(runId);
  }
  findRuns(filter: RunFilter): Promise<(RunRecord & { tenant: string })[]> {
    return this.policy.findRuns(filter);
  }
}
