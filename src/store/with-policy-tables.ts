import type { RunRecord, RunSearch } from "./types.js";
import type { DeploymentRecord, HookCallRecord, PolicyStore, RunFilter, ScriptSummary, ScriptVersionRecord } from "./policy-types.js";
import type { WriteOptions } from "./quota.js";

/** The PolicyStore half of a store, served by its policy tables (sqlite-policy.ts, memory-policy.ts). */
export abstract class WithPolicyTables implements PolicyStore, RunSearch {
  protected abstract readonly policy: PolicyStore & RunSearch;

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
  createDeployment(deployment: Omit<DeploymentRecord, "number">): Promise<DeploymentRecord> {
    return this.policy.createDeployment(deployment);
  }
  getDeployment(tenant: string, id: string): Promise<DeploymentRecord | undefined> {
    return this.policy.getDeployment(tenant, id);
  }
  listDeployments(tenant: string): Promise<DeploymentRecord[]> {
    return this.policy.listDeployments(tenant);
  }
  recordHookCall(call: Omit<HookCallRecord, "index">, options?: WriteOptions): Promise<void> {
    return this.policy.recordHookCall(call, options);
  }
  listHookCalls(runId: string): Promise<HookCallRecord[]> {
    return this.policy.listHookCalls(runId);
  }
  findRuns(filter: RunFilter): Promise<(RunRecord & { tenant: string })[]> {
    return this.policy.findRuns(filter);
  }
}
