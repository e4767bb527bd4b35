import { HookboxError } from "../errors.js";
import { createTenantRuntime } from "../host/tenant-runtime.js";
import type { TenantRuntime } from "../host/types.js";
import type { SandboxPool } from "../sandbox/api.js";
import type { KvStore } from "../store/kv.js";
import type { ServerConfig } from "./config.js";

export interface BuildRuntimesOptions {
  pool: SandboxPool;
  kv: KvStore;
  /** The runtimes serving now and the config they were built from: a tenant whose config is unchanged keeps its runtime. */
  previous?: { config: ServerConfig; runtimes: ReadonlyMap<string, TenantRuntime> };
  /** Every hook call's wall time (the server's metrics). */
  onHookTimed?(tenant: string, hook: string, durationMs: number): void;
}

/**
 * One runtime per configured tenant, each loading its scripts, host tools and model, so a broken tenant is
 * found before anything is served (at start, and at a reload, which then keeps the old configuration).
 */
export async function buildTenantRuntimes(config: ServerConfig, options: BuildRuntimesOptions): Promise<Map<string, TenantRuntime>> {
  const runtimes = new Map<string, TenantRuntime>();
  const before = new Map(options.previous?.config.tenants.map((tenant) => [tenant.config.name, JSON.stringify(tenant.config)]));
  for (const tenant of config.tenants) {
    const name = tenant.config.name;
    const kept = options.previous?.runtimes.get(name);
    if (kept && before.get(name) === JSON.stringify(tenant.config)) {
      runtimes.set(name, kept);
      continue;
    }
    try {
      runtimes.set(
        name,
        await createTenantRuntime(tenant.config, options.pool, {
          kv: options.kv,
          ...(options.onHookTimed ? { onHookTimed: (hook: string, ms: number) => options.onHookTimed!(name, hook, ms) } : {}),
        }),
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new HookboxError(error instanceof HookboxError ? error.code : "CONFIG", `config ${config.file}: tenant ${name}: ${message}`);
    }
  }
  return runtimes;
}
