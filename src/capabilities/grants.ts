import type { ModelSpec } from "../engine/model-spec.js";

/*
 * What a tenant's scripts may reach through ctx (docs/capabilities.md): the grants come from the serve
 * config, the library's TenantConfig or the CLI flags; the limits bound what one run may do with them.
 */

/** A header the host adds to requests under an egress entry, its value read from the host's environment. */
export interface EgressHeader {
  env: string;
  /** Put before the variable's value (`"Bearer "`). */
  prefix?: string;
}

/** A URL prefix scripts may fetch under (scheme, host, port and path prefix), with host-side headers. */
export interface EgressEntry {
  url: string;
  headers?: Record<string, EgressHeader>;
  /**
   * Addresses other than public ones the entry's host may resolve to: `true` for any (a partner on the
   * operator's own network), or the networks allowed (`["10.1.0.0/16", "fd00::/8"]`). Default: public only.
   */
  allowPrivate?: boolean | string[];
}

export interface CapabilityLimits {
  /** ctx.fetch calls per run, refused ones included (default 50). */
  maxFetchesPerRun: number;
  /** Time for one ctx.fetch, redirects and body included, ms (default 5000). */
  fetchTimeoutMs: number;
  /** Largest response body, bytes; the read stops past it (default 1 MiB). */
  maxResponseBytes: number;
  /** Largest request body, bytes (default and most 1 MiB: the sandbox refuses bigger requests). */
  maxRequestBytes: number;
  /** Redirects followed for one request, each inside the egress list (default 5). */
  maxRedirects: number;
  /** ctx.kv calls per run (default 1000). */
  maxKvOpsPerRun: number;
  /** Bytes of the tenant's kv entries, keys and bookkeeping included (default 10 MiB). */
  kvQuotaBytes: number;
  /** ctx.model.generate calls per run (default 20). */
  maxModelCallsPerRun: number;
  /** Time for one guard-model call, ms (default 30000). */
  modelTimeoutMs: number;
  /** Largest maxTokens a guard call may ask for (default 4096). */
  maxModelOutputTokens: number;
}

export const DEFAULT_CAPABILITY_LIMITS: CapabilityLimits = {
  maxFetchesPerRun: 50,
  fetchTimeoutMs: 5000,
  maxResponseBytes: 1024 * 1024,
  maxRequestBytes: 1024 * 1024,
  maxRedirects: 5,
  maxKvOpsPerRun: 1000,
  kvQuotaBytes: 10 * 1024 * 1024,
  maxModelCallsPerRun: 20,
  modelTimeoutMs: 30000,
  maxModelOutputTokens: 4096,
};

/** Fixed by the contract: a kv key and one serialized value. */
export const KV_MAX_KEY_CHARS = 256;
export const KV_MAX_VALUE_BYTES = 64 * 1024;
/** Keys per ctx.kv.list page. */
export const KV_LIST_PAGE = 100;

export interface CapabilityGrants {
  /** URL prefixes ctx.fetch may reach; none: ctx.fetch is denied. */
  egress?: (string | EgressEntry)[];
  /** The model ctx.model.generate calls; `"run"` is the run's own model; none: denied. */
  guardModel?: ModelSpec | "run";
  /** ctx.kv is granted unless this is false. */
  kv?: boolean;
  limits?: Partial<CapabilityLimits>;
}

export function capabilityLimits(grants: CapabilityGrants | undefined): CapabilityLimits {
  return { ...DEFAULT_CAPABILITY_LIMITS, ...grants?.limits };
}
