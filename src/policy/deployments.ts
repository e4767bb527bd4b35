import { HookboxError } from "../errors.js";
import { createTenantRuntime } from "../host/tenant-runtime.js";
import type { TenantConfig, TenantRuntime } from "../host/types.js";
import { newId } from "../loop/ids.js";
import type { SandboxPool, UploadedFiles } from "../sandbox/api.js";
import type { DeploymentRecord, RunDeployment, RunRecord, ScriptRef, ScriptVersionRecord, Store } from "../store/index.js";

/*
 * Each tenant's deployments: which script versions new runs use, and which shadow them. The current
 * deployment is the tenant's latest one in the store, read at every run start, so a deploy takes effect at
 * once and in every process sharing the store. A run records its deployment, and its resume asks for a
 * runtime of that deployment, whatever is current by then. The tenant config's `scripts` are deployment 1.
 */

/** Where the config's runtime of a tenant is found: built up front (a Map) or on first use (src/server/lazy-runtimes.ts). */
export interface ConfigRuntimes {
  has(tenant: string): boolean;
  get(tenant: string): TenantRuntime | Promise<TenantRuntime> | undefined;
}

export interface DeploymentsOptions {
  store: Store;
  pool: SandboxPool;
  tenants: ReadonlyMap<string, TenantConfig>;
  /** The runtimes of the config's scripts (built at server start, or on a tenant's first use: src/server/lazy-runtimes.ts). */
  configRuntimes: ConfigRuntimes;
  /**
   * How long the runtime of a deployment that is no longer current stays loaded after its last use here, ms
   * (default 60000). Then its sandboxes are dropped; a resume of one of its runs loads it again.
   */
  retireAfterMs?: number;
}

/** A deployment's runtime in this process. */
interface LoadedDeployment {
  tenant: string;
  /** Shares the config's runtime (and its sandbox): nothing of its own to drop. */
  fromConfig: boolean;
  runtime: Promise<TenantRuntime>;
  /** Runs of it in progress in this process. */
  liveRuns: number;
  /** When it was last handed out or last ran, performance.now(). */
  lastUsed: number;
}

export interface DeployRequest {
  scripts: ScriptRef[];
  shadow?: ScriptRef[];
}

/** A request naming something that does not exist or does not fit: 400, with the JSON path of the culprit. */
export class DeploymentRefused extends HookboxError {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super("USAGE", message, { path });
  }
}

export class Deployments {
  private readonly loaded = new Map<string, LoadedDeployment>();
  private readonly firsts = new Map<string, Promise<DeploymentRecord>>();
  /** Each tenant's current deployment as this process last read it. */
  private readonly currentIds = new Map<string, string>();
  private retireTimer: NodeJS.Timeout | undefined;
  private readonly retireAfterMs: number;

  constructor(private readonly options: DeploymentsOptions) {
    this.retireAfterMs = options.retireAfterMs ?? 60_000;
  }

  /** The tenant's current deployment (the first one, of the config's scripts, is made on first use). */
  async current(tenant: string): Promise<DeploymentRecord> {
    const last = await this.options.store.currentDeployment(tenant);
    if (last) return this.noteCurrent(last);
    // Concurrent first uses of a tenant make one first deployment, not one each.
    let first = this.firsts.get(tenant);
    if (!first) {
      // Another process sharing the store may make it meanwhile: then the store returns that one (onlyIfFirst).
      first = this.options.store.createDeployment(
        { id: newId("dep"), tenant, scripts: [], shadow: [], fromConfig: true, createdMs: Date.now() },
        { onlyIfFirst: true },
      );
      this.firsts.set(tenant, first);
      first.catch(() => this.firsts.delete(tenant));
    }
    return this.noteCurrent(await first);
  }

  /** Deployments of the tenant that stopped being current may now be retired (retireIdle). */
  private noteCurrent(deployment: DeploymentRecord): DeploymentRecord {
    if (this.currentIds.get(deployment.tenant) !== deployment.id) {
      this.currentIds.set(deployment.tenant, deployment.id);
      this.scheduleRetirement();
    }
    return deployment;
  }

  async history(tenant: string): Promise<DeploymentRecord[]> {
    await this.current(tenant);
    return this.options.store.listDeployments(tenant);
  }

  /** Checks that every version exists and that they load together (with the tenant's host tools), then makes it current. */
  async deploy(tenant: string, request: DeployRequest): Promise<DeploymentRecord> {
    const previous = await this.current(tenant);
    const draft: Omit<DeploymentRecord, "number"> = {
      id: newId("dep"),
      tenant,
      scripts: request.scripts,
      shadow: request.shadow ?? [],
      fromConfig: false,
      previousId: previous.id,
      createdMs: Date.now(),
    };
    await this.runtimeOf(draft);
    return this.noteCurrent(await this.options.store.createDeployment(draft));
  }

  /** Makes the deployment that preceded the current one current again (a new entry in the history); undefined when there is none. */
  async rollback(tenant: string): Promise<DeploymentRecord | undefined> {
    const current = await this.current(tenant);
    const target = current.previousId ? await this.options.store.getDeployment(tenant, current.previousId) : undefined;
    if (!target) return undefined;
    const { number: _number, id: _id, rollbackOf: _rollbackOf, previousId, ...rest } = target;
    return this.noteCurrent(
      await this.options.store.createDeployment({
        ...rest,
        id: newId("dep"),
        ...(previousId ? { previousId } : {}),
        rollbackOf: current.id,
        createdMs: Date.now(),
      }),
    );
  }

  /** The runtime a run uses: the deployment it recorded (resume), else the tenant's current one. */
  async runtimeFor(tenant: string, run?: RunRecord): Promise<TenantRuntime> {
    if (!run) return this.runtimeOf(await this.current(tenant));
    if (!run.deployment) return this.configRuntime(tenant); // a run stored before deployments existed
    const recorded = await this.options.store.getDeployment(tenant, run.deployment.id);
    if (!recorded)
      throw new HookboxError("STORE", `run ${run.id} names deployment ${run.deployment.id}, which tenant ${tenant} does not have`);
    return this.runtimeOf(recorded);
  }

  private async configRuntime(tenant: string): Promise<TenantRuntime> {
    // Gone from the config since the request began (a reload removed it): the request is answered, never run on nothing.
    if (!this.options.configRuntimes.has(tenant)) throw new HookboxError("TENANT_REMOVED", `tenant ${tenant} is no longer configured`);
    return (await this.options.configRuntimes.get(tenant))!;
  }

  private runtimeOf(deployment: Omit<DeploymentRecord, "number">): Promise<TenantRuntime> {
    let entry = this.loaded.get(deployment.id);
    if (!entry) {
      const { id, tenant } = deployment;
      const runtime = this.build(deployment).then((built) => this.counted(id, built));
      entry = { tenant, fromConfig: deployment.fromConfig, runtime, liveRuns: 0, lastUsed: performance.now() };
      this.loaded.set(id, entry);
      runtime.catch(() => this.loaded.delete(id));
    }
    entry.lastUsed = performance.now();
    return entry.runtime;
  }

  /** The runtime, counting its runs in progress here: a deployment with a run in progress is never retired. */
  private counted(id: string, runtime: TenantRuntime): TenantRuntime {
    return {
      ...runtime,
      start: (request) => {
        const entry = this.loaded.get(id);
        if (entry) entry.liveRuns++;
        const ended = () => {
          if (!entry) return;
          entry.liveRuns--;
          entry.lastUsed = performance.now();
          this.scheduleRetirement();
        };
        try {
          const handle = runtime.start(request);
          void handle.wait().then(ended, ended);
          return handle;
        } catch (error) {
          ended();
          throw error;
        }
      },
    };
  }

  /**
   * Drops the runtimes of deployments that are no longer current, have no run in progress here and were not
   * used for `retireAfterMs`: their sandboxes go (isolates and bundles), so memory follows the deployments in
   * use, not every deployment ever made. The wait covers the moment between handing a runtime out and its run
   * starting.
   */
  private retireIdle(): void {
    this.retireTimer = undefined;
    const now = performance.now();
    let waiting = false;
    for (const [id, entry] of this.loaded) {
      if (this.currentIds.get(entry.tenant) === id || entry.liveRuns > 0) continue;
      if (now - entry.lastUsed < this.retireAfterMs) {
        waiting = true;
        continue;
      }
      this.loaded.delete(id);
      if (!entry.fromConfig) this.dropSandboxes(entry.tenant, id);
    }
    if (waiting) this.scheduleRetirement();
  }

  private dropSandboxes(tenant: string, id: string): void {
    this.options.pool.drop?.(sandboxTenantOf(tenant, id));
    this.options.pool.drop?.(`${sandboxTenantOf(tenant, id)}~shadow`);
  }

  private scheduleRetirement(): void {
    if (this.retireTimer) return;
    this.retireTimer = setTimeout(() => this.retireIdle(), this.retireAfterMs + 1);
    this.retireTimer.unref();
  }

  private async build(deployment: Omit<DeploymentRecord, "number">): Promise<TenantRuntime> {
    const { tenant } = deployment;
    if (deployment.fromConfig) {
      const record: RunDeployment = { id: deployment.id, scripts: [], shadow: [] };
      return { ...(await this.configRuntime(tenant)), deployment: record };
    }
    const config = this.options.tenants.get(tenant);
    if (!config) throw new HookboxError("TENANT_REMOVED", `tenant ${tenant} is no longer configured`);
    const active = await this.versions(tenant, deployment.scripts, "$.scripts");
    const shadow = await this.versions(tenant, deployment.shadow, "$.shadow");
    const record: RunDeployment = {
      id: deployment.id,
      scripts: active.map(({ name, version, bundleHash }) => ({ name, version, bundleHash })),
      shadow: shadow.map(({ name, version, bundleHash }) => ({ name, version, bundleHash })),
    };
    try {
      return await createTenantRuntime({ ...config, scripts: active.map(asSource) }, this.options.pool, {
        // ctx.kv belongs to the tenant, whichever deployment runs.
        kv: this.options.store.kv,
        deployment: {
          record,
          sandboxTenant: sandboxTenantOf(tenant, deployment.id),
          versions: active.map((v) => v.version),
          ...(shadow.length
            ? {
                shadow: {
                  sources: shadow.map(asSource),
                  versions: shadow.map((v) => v.version),
                  sandboxTenant: `${sandboxTenantOf(tenant, deployment.id)}~shadow`,
                },
              }
            : {}),
        },
      });
    } catch (error) {
      this.dropSandboxes(tenant, deployment.id);
      throw new DeploymentRefused(`the deployment does not load: ${(error as Error).message}`, "$");
    }
  }

  private async versions(tenant: string, refs: ScriptRef[], path: string): Promise<ScriptVersionRecord[]> {
    const seen = new Set<string>();
    const out: ScriptVersionRecord[] = [];
    for (const [index, ref] of refs.entries()) {
      if (seen.has(ref.name)) throw new DeploymentRefused(`script ${ref.name} is listed twice`, `${path}[${index}].name`);
      seen.add(ref.name);
      const version = await this.options.store.getScriptVersion(tenant, ref.name, ref.version);
      if (!version) throw new DeploymentRefused(`no version ${ref.version} of script ${ref.name}`, `${path}[${index}]`);
      out.push(version);
    }
    return out;
  }
}

/** The sandbox a deployment's scripts load in: one per deployment, so two versions of a script never share one. */
function sandboxTenantOf(tenant: string, deploymentId: string): string {
  return `${tenant}~${deploymentId}`;
}

/** A stored version as the sandbox loads it. */
export function asSource(version: ScriptVersionRecord): UploadedFiles {
  return { files: version.files, entry: version.entry, label: `${version.name}@v${version.version}` };
}
