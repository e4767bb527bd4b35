import type { RunRecord, SessionRecord } from "./types.js";
import type { DeploymentRecord, HookCallRecord, PolicyStore, RunFilter, ScriptVersionRecord } from "./policy-types.js";

/* The in-memory side of PolicyStore; MemoryStore delegates to it. */
export class MemoryPolicyTables implements PolicyStore {
  private readonly versions = new Map<string, ScriptVersionRecord[]>();
  private readonly deployments = new Map<string, DeploymentRecord[]>();
  private readonly hookCalls = new Map<string, HookCallRecord[]>();

  constructor(private readonly data: { runs(): RunRecord[]; session(id: string): SessionRecord | undefined }) {}

  async createScriptVersion(version: Omit<ScriptVersionRecord, "version">): Promise<ScriptVersionRecord> {
    const key = JSON.stringify([version.tenant, version.name]);
    const list = this.versions.get(key) ?? [];
    const stored = structuredClone({ ...version, version: list.length + 1 });
    list.push(stored);
    this.versions.set(key, list);
    return structuredClone(stored);
  }

  async getScriptVersion(tenant: string, name: string, version: number): Promise<ScriptVersionRecord | undefined> {
    const found = this.versions.get(JSON.stringify([tenant, name]))?.[version - 1];
    return found && structuredClone(found);
  }

  async listScriptVersions(tenant: string, name: string): Promise<ScriptVersionRecord[]> {
    return structuredClone(this.versions.get(JSON.stringify([tenant, name])) ?? []);
  }

  async createDeployment(deployment: Omit<DeploymentRecord, "number">): Promise<DeploymentRecord> {
    const list = this.deployments.get(deployment.tenant) ?? [];
    const stored = structuredClone({ ...deployment, number: list.length + 1 });
    list.push(stored);
    this.deployments.set(deployment.tenant, list);
    return structuredClone(stored);
  }

  async getDeployment(tenant: string, id: string): Promise<DeploymentRecord | undefined> {
    const found = this.deployments.get(tenant)?.find((deployment) => deployment.id === id);
    return found && structuredClone(found);
  }

  async listDeployments(tenant: string): Promise<DeploymentRecord[]> {
    return structuredClone(this.deployments.get(tenant) ?? []);
  }

  async recordHookCall(call: Omit<HookCallRecord, "index">): Promise<void> {
    const list = this.hookCalls.get(call.runId) ?? [];
    list.push(structuredClone({ ...call, index: list.length + 1 }));
    this.hookCalls.set(call.runId, list);
  }

  async listHookCalls(runId: string): Promise<HookCallRecord[]> {
    return structuredClone(this.hookCalls.get(runId) ?? []);
  }

  async findRuns(filter: RunFilter): Promise<(RunRecord & { tenant: string })[]> {
    const sessions = filter.sessionIds && new Set(filter.sessionIds);
    return this.data
      .runs()
      .map((run) => ({ ...structuredClone(run), tenant: this.data.session(run.sessionId)?.tenant ?? "" }))
      .filter(
        (run) =>
          (filter.tenant === undefined || run.tenant === filter.tenant) &&
          (sessions === undefined || sessions.has(run.sessionId)) &&
          (filter.sinceMs === undefined || run.startedMs >= filter.sinceMs) &&
          (filter.deploymentId === undefined || run.deployment?.id === filter.deploymentId),
      )
      .sort((a, b) => a.startedMs - b.startedMs);
  }
}
