import type { TenantConfig, TenantRuntime } from "../host/types.js";
import type { ServedTenant, ServerConfig } from "./config.js";
import { TokenBucket } from "./rate-limit.js";

/*
 * The server's configuration as it is now: a reload (SIGHUP, POST /v1/admin/reload) replaces it in place, so
 * every route, the session manager and the deployments read the new tenants, keys and limits from their next
 * request on. Runs in flight keep the runtime they started with.
 */
export class LiveConfig {
  private config: ServerConfig;
  /** Served tenants by name (one Map for the server's life: holders of it see a reload). */
  readonly tenants = new Map<string, ServedTenant>();
  /** Each tenant's TenantConfig by name (what deployments build runtimes from). */
  readonly tenantConfigs = new Map<string, TenantConfig>();
  /** The runtime new runs of each configured tenant start on. */
  readonly runtimes = new Map<string, TenantRuntime>();
  private readonly runBuckets = new Map<string, TokenBucket>();
  private readonly requestBuckets = new Map<string, TokenBucket>();

  constructor(config: ServerConfig, runtimes: ReadonlyMap<string, TenantRuntime> = new Map()) {
    this.config = config;
    this.replace(config, runtimes);
  }

  get current(): ServerConfig {
    return this.config;
  }

  runBucket(tenant: string): TokenBucket {
    return this.runBuckets.get(tenant)!;
  }

  requestBucket(tenant: string): TokenBucket {
    return this.requestBuckets.get(tenant)!;
  }

  /** Swaps in a new configuration and its runtimes; a tenant whose rate is unchanged keeps its bucket (and what it spent). */
  replace(config: ServerConfig, runtimes: ReadonlyMap<string, TenantRuntime>): void {
    const previous = new Map(this.tenants);
    this.config = config;
    this.tenants.clear();
    this.tenantConfigs.clear();
    this.runtimes.clear();
    for (const tenant of config.tenants) {
      const name = tenant.config.name;
      const before = previous.get(name);
      this.tenants.set(name, tenant);
      this.tenantConfigs.set(name, tenant.config);
      const runtime = runtimes.get(name);
      if (runtime) this.runtimes.set(name, runtime);
      if (!before || before.runsPerMinute !== tenant.runsPerMinute) this.runBuckets.set(name, new TokenBucket(tenant.runsPerMinute));
      if (!before || before.requestsPerMinute !== tenant.requestsPerMinute)
        this.requestBuckets.set(name, new TokenBucket(tenant.requestsPerMinute));
    }
    for (const name of previous.keys()) {
      if (this.tenants.has(name)) continue;
      this.runBuckets.delete(name);
      this.requestBuckets.delete(name);
    }
  }
}
