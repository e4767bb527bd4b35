import type { HookCallWrite, RunRecord, SessionRecord } from "./types.js";
import type { DeploymentRecord, HookCallRecord, RunFilter, ScriptSummary, ScriptVersionRecord } from "./policy-types.js";
import type { WriteOptions } from "./quota.js";
import { scriptVersionBytes } from "./row-bytes.js";
import type { PolicyTables } from "./with-policy-tables.js";

/** What the policy tables use of the MemoryStore around them: its runs and sessions, and its quota charges. */
interface MemoryStoreData {
  runs(): RunRecord[];
  session(id: string): SessionRecord | undefined;
  /** Adds bytes to a tenant, or throws STORE_QUOTA having added nothing. */
  charge(tenant: string, bytes: number, options?: WriteOptions): void;
}

/* The in-memory side of PolicyStore; MemoryStore delegates to it. */
export class MemoryPolicyTables implements PolicyTables {
  private readonly versions = new Map<string, ScriptVersionRecord[]>();
  private readonly deployments = new Map<string, DeploymentRecord[]>();
  private readonly hookCalls = new Map<string, HookCallRecord[]>();

  constructor(private readonly data: MemoryStoreData) {}

  async createScriptVersion(version: Omit<ScriptVersionRecord, "version">, options?: WriteOptions): Promise<ScriptVersionRecord> {
    this.data.charge(version.tenant, scriptVersionBytes(version), options);
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

  async listScripts(tenant: string): Promise<ScriptSummary[]> {
    const scripts: ScriptSummary[] = [];
    for (const list of this.versions.values()) {
      const latest = list.at(-1);
      if (latest?.tenant === tenant) scripts.push({ name: latest.name, latestVersion: latest.version, createdMs: latest.createdMs });
    }
    return scripts.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async createDeployment(deployment: Omit<DeploymentRecord, "number">, options?: { onlyIfFirst?: boolean }): Promise<DeploymentRecord> {
    const list = this.deployments.get(deployment.tenant) ?? [];
    if (options?.onlyIfFirst && list.length > 0) return structuredClone(list.at(-1)!);
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

  async currentDeployment(tenant: string): Promise<DeploymentRecord | undefined> {
    const current = this.deployments.get(tenant)?.at(-1);
    return current && structuredClone(current);
  }

  /** A run write's hook chain record (charged by the store with the rest of its write). */
  addHookCall(runId: string, call: HookCallWrite): void {
    const list = this.hookCalls.get(runId) ?? [];
    const { decisionJson, payloadJson, ...rest } = call;
    list.push({
      runId,
      index: list.length + 1,
      ...rest,
      decision: JSON.parse(decisionJson),
      ...(payloadJson === undefined ? {} : { payload: JSON.parse(payloadJson) }),
    });
    this.hookCalls.set(runId, list);
  }

  /** A deleted run's hook chain records. */
  dropHookCalls(runId: string): void {
    this.hookCalls.delete(runId);
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
