import { HookboxError } from "../errors.js";
import type { TenantConfig, TenantRuntime } from "../host/types.js";
import type { ServedTenant, ServerConfig } from "./config.js";
import { TokenBucket } from "./rate-limit.js";
import type { ConfigRuntimes } from "../policy/deployments.js";

/*
 * The server's configuration as it is now: a reload (SIGHUP, POST /v1/admin/reload) replaces it in place, so
 * every route, the session manager and the deployments read the new tenants, keys and limits from their next
 * request on. Runs in flight keep the runtime they started with. A request of a tenant that a reload removes while
 * the request is in flight finds the tenant gone where it next looks it up (served(), the buckets, the runtimes):
 * TENANT_REMOVED (401), never a missing entry read as if it were there.
 */
export class LiveConfig {
  private config: ServerConfig;
  /** Served tenants by name (one Map for the server's life: holders of it see a reload). */
  readonly tenants = new Map<string, ServedTenant>();
  /** Each tenant's TenantConfig by name (what deployments build runtimes from). */
  readonly tenantConfigs = new Map<string, TenantConfig>();
  /** Where the runtime new runs of each configured tenant start on is found (built up front, or on first use). */
  private source: ConfigRuntimes;
  /** The runtimes of the configured tenants, for their next runs (one object for the server's life: holders of it see a reload). */
  readonly runtimes: ConfigRuntimes = {
    has: (tenant) => this.tenants.has(tenant) && this.source.has(tenant),
    get: (tenant) => {
      if (!this.tenants.has(tenant)) throw tenantRemoved(tenant);
      return this.source.get(tenant);
    },
  };
  private readonly runBuckets = new Map<string, TokenBucket>();
  private readonly requestBuckets = new Map<string, TokenBucket>();

  constructor(config: ServerConfig, runtimes: ConfigRuntimes = new Map<string, TenantRuntime>()) {
    this.config = config;
    this.source = runtimes;
    this.replace(config, runtimes);
  }

  get current(): ServerConfig {
    return this.config;
  }

  /** The runtimes as the last replace() gave them (a reload builds the next ones from these). */
  get runtimeSource(): ConfigRuntimes {
    return this.source;
  }

  /** The tenant's entry in the config in force; TENANT_REMOVED once a reload has taken it out. */
  served(tenant: string): ServedTenant {
    const served = this.tenants.get(tenant);
    if (!served) throw tenantRemoved(tenant);
    return served;
  }

  runBucket(tenant: string): TokenBucket {
    const bucket = this.runBuckets.get(tenant);
    if (!bucket) throw tenantRemoved(tenant);
    return bucket;
  }

  requestBucket(tenant: string): TokenBucket {
    const bucket = this.requestBuckets.get(tenant);
    if (!bucket) throw tenantRemoved(tenant);
    return bucket;
  }

  /** Swaps in a new configuration and its runtimes; a tenant whose rate is unchanged keeps its bucket (and what it spent). */
  replace(config: ServerConfig, runtimes: ConfigRuntimes): void {
    const previous = new Map(this.tenants);
    this.config = config;
    this.source = runtimes;
    this.tenants.clear();
    this.tenantConfigs.clear();
    for (const tenant of config.tenants) {
      const name = tenant.config.name;
      const before = previous.get(name);
      this.tenants.set(name, tenant);
      this.tenantConfigs.set(name, tenant.config);
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

/** What a request (or a run start) of a tenant no longer in the config is answered. */
export function tenantRemoved(tenant: string, why = "a reload removed it while this request was in flight"): HookboxError {
  return new HookboxError("TENANT_REMOVED", `tenant ${tenant} is not in the server's config (${why}): its API keys do not work`, {
    tenant,
  });
}
