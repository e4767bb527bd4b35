import { HookboxError } from "../errors.js";
import { checkedEgress } from "../capabilities/tenant-capabilities.js";
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
 * found before anything is served (`hookbox serve --strict`: at start, and at a reload, which then keeps the old
 * configuration). Without --strict, src/server/lazy-runtimes.ts builds them one by one after listening.
 */
export async function buildTenantRuntimes(config: ServerConfig, options: BuildRuntimesOptions): Promise<Map<string, TenantRuntime>> {
  const runtimes = new Map<string, TenantRuntime>();
  const unchanged = options.previous ? unchangedTenants(options.previous.config, config) : new Set<string>();
  for (const tenant of config.tenants) {
    const name = tenant.config.name;
    const kept = options.previous?.runtimes.get(name);
    runtimes.set(name, kept && unchanged.has(name) ? kept : await buildTenantRuntime(config, name, options));
  }
  return runtimes;
}

/** One configured tenant's runtime; a failure names the config file and the tenant. */
export async function buildTenantRuntime(
  config: ServerConfig,
  name: string,
  options: Pick<BuildRuntimesOptions, "pool" | "kv" | "onHookTimed">,
): Promise<TenantRuntime> {
  const tenant = config.tenants.find((candidate) => candidate.config.name === name);
  if (!tenant) throw new HookboxError("CONFIG", `config ${config.file}: no tenant ${name}`);
  try {
    return await createTenantRuntime(tenant.config, options.pool, {
      kv: options.kv,
      ...(options.onHookTimed ? { onHookTimed: (hook: string, ms: number) => options.onHookTimed!(name, hook, ms) } : {}),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new HookboxError(error instanceof HookboxError ? error.code : "CONFIG", `config ${config.file}: tenant ${name}: ${message}`);
  }
}

/** The tenants whose entry is the same in `next` as in `previous`: a reload keeps their runtimes. */
export function unchangedTenants(previous: ServerConfig, next: ServerConfig): Set<string> {
  const before = new Map(previous.tenants.map((tenant) => [tenant.config.name, JSON.stringify(tenant.config)]));
  return new Set(
    next.tenants.filter((tenant) => before.get(tenant.config.name) === JSON.stringify(tenant.config)).map((t) => t.config.name),
  );
}

/**
 * What the config says that a runtime would only find when built, checked up front: each egress header's secret
 * in the environment (a reload that fails it is refused; a start exits 2).
 */
export function checkTenantSecrets(config: ServerConfig): void {
  for (const tenant of config.tenants) checkedEgress(tenant.config.name, tenant.config.capabilities);
}
