import type { RunRecord } from "./types.js";
import type { DeploymentRecord, HookCallRecord, PolicyStore, RunFilter, ScriptVersionRecord } from "./policy-types.js";

/** The PolicyStore half of a store, served by its policy tables (sqlite-policy.ts, memory-policy.ts). */
export abstract class WithPolicyTables implements PolicyStore {
  protected abstract readonly policy: PolicyStore;

  createScriptVersion(version: Omit<ScriptVersionRecord, "version">): Promise<ScriptVersionRecord> {
    return this.policy.createScriptVersion(version);
  }
  getScriptVersion(tenant: string, name: string, version: number): Promise<ScriptVersionRecord | undefined> {
    return this.policy.getScriptVersion(tenant, name, version);
  }
  listScriptVersions(tenant: string, name: string): Promise<ScriptVersionRecord[]> {
    return this.policy.listScriptVersions(tenant, name);
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
  recordHookCall(call: Omit<HookCallRecord, "index">): Promise<void> {
    return this.policy.recordHookCall(call);
  }
  listHookCalls(runId: string): Promise<HookCallRecord[]> {
    return this.policy.listHookCalls(runId);
  }
  findRuns(filter: RunFilter): Promise<(RunRecord & { tenant: string })[]> {
    return this.policy.findRuns(filter);
  }
}
