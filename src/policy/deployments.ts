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

export interface DeploymentsOptions {
  store: Store;
  pool: SandboxPool;
  tenants: ReadonlyMap<string, TenantConfig>;
  /** The runtimes of the config's scripts (built at server start). */
  configRuntimes: ReadonlyMap<string, TenantRuntime>;
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
  private readonly runtimes = new Map<string, Promise<TenantRuntime>>();
  private readonly firsts = new Map<string, Promise<DeploymentRecord>>();

  constructor(private readonly options: DeploymentsOptions) {}

  /** The tenant's current deployment (the first one, of the config's scripts, is made on first use). */
  async current(tenant: string): Promise<DeploymentRecord> {
    const last = (await this.options.store.listDeployments(tenant)).at(-1);
    if (last) return last;
    // Concurrent first uses of a tenant make one first deployment, not one each.
    let first = this.firsts.get(tenant);
    if (!first) {
      first = this.options.store.createDeployment({
        id: newId("dep"),
        tenant,
        scripts: [],
        shadow: [],
        fromConfig: true,
        createdMs: Date.now(),
      });
      this.firsts.set(tenant, first);
      first.catch(() => this.firsts.delete(tenant));
    }
    return first;
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
    return this.options.store.createDeployment(draft);
  }

  /** Makes the deployment that preceded the current one current again (a new entry in the history); undefined when there is none. */
  async rollback(tenant: string): Promise<DeploymentRecord | undefined> {
    const current = await this.current(tenant);
    const target = current.previousId ? await this.options.store.getDeployment(tenant, current.previousId) : undefined;
    if (!target) return undefined;
    const { number: _number, id: _id, rollbackOf: _rollbackOf, previousId, ...rest } = target;
    return this.options.store.createDeployment({
      ...rest,
      id: newId("dep"),
      ...(previousId ? { previousId } : {}),
      rollbackOf: current.id,
      createdMs: Date.now(),
    });
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

  private configRuntime(tenant: string): TenantRuntime {
    const runtime = this.options.configRuntimes.get(tenant);
    if (!runtime) throw new HookboxError("CONFIG", `tenant ${tenant} is not configured`);
    return runtime;
  }

  private runtimeOf(deployment: Omit<DeploymentRecord, "number">): Promise<TenantRuntime> {
    let runtime = this.runtimes.get(deployment.id);
    if (!runtime) {
      runtime = this.build(deployment);
      this.runtimes.set(deployment.id, runtime);
      runtime.catch(() => this.runtimes.delete(deployment.id));
    }
    return runtime;
  }

  private async build(deployment: Omit<DeploymentRecord, "number">): Promise<TenantRuntime> {
    const { tenant } = deployment;
    if (deployment.fromConfig) {
      const record: RunDeployment = { id: deployment.id, scripts: [], shadow: [] };
      return { ...this.configRuntime(tenant), deployment: record };
    }
    const config = this.options.tenants.get(tenant);
    if (!config) throw new HookboxError("CONFIG", `tenant ${tenant} is not configured`);
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
          sandboxTenant: `${tenant}~${deployment.id}`,
          versions: active.map((v) => v.version),
          ...(shadow.length
            ? {
                shadow: {
                  sources: shadow.map(asSource),
                  versions: shadow.map((v) => v.version),
                  sandboxTenant: `${tenant}~${deployment.id}~shadow`,
                },
              }
            : {}),
        },
      });
    } catch (error) {
      this.options.pool.drop?.(`${tenant}~${deployment.id}`);
      this.options.pool.drop?.(`${tenant}~${deployment.id}~shadow`);
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

/** A stored version as the sandbox loads it. */
export function asSource(version: ScriptVersionRecord): UploadedFiles {
  return { files: version.files, entry: version.entry, label: `${version.name}@v${version.version}` };
}
