import { ApiError } from "./api-error.js";
import type { ServedTenant } from "./config.js";
import type { ContextOptions } from "../host/types.js";

/*
 * A tenant's configured limits are the operator's: a request may lower them, never raise them. A value above
 * is refused (400 ABOVE_TENANT_LIMIT naming the field and the limit) rather than silently clamped, so a
 * client learns why its run did not get what it asked. With no limit configured, the built-in ceiling holds.
 */

export const BUILT_IN_CEILINGS = {
  maxIterations: 1000,
  pauseTimeoutMs: 24 * 60 * 60 * 1000,
  // Budgets have no built-in ceiling: only a tenant's own limit caps them.
  maxTokens: Number.POSITIVE_INFINITY,
  maxCostUsd: Number.POSITIVE_INFINITY,
};

type Ceiled = keyof typeof BUILT_IN_CEILINGS;

export function ceilingOf(tenant: ServedTenant, field: Ceiled): number {
  return tenant.config.runDefaults?.[field] ?? BUILT_IN_CEILINGS[field];
}

/** Throws 400 when `options` asks for more than the tenant's limits; `at` is the JSON path of `options` in the body. */
export function refuseAboveLimits(
  tenant: ServedTenant,
  options: Partial<Record<Ceiled, unknown>> & { context?: ContextOptions },
  at = "$",
): void {
  refuseContextAboveLimits(tenant, options.context, `${at}.context`);
  for (const field of Object.keys(BUILT_IN_CEILINGS) as Ceiled[]) {
    const asked = options[field];
    const limit = ceilingOf(tenant, field);
    if (typeof asked === "number" && asked > limit) {
      const source = tenant.config.runDefaults?.[field] !== undefined ? `the tenant's limits.${field}` : "the server's built-in ceiling";
      throw new ApiError(400, "ABOVE_TENANT_LIMIT", `${at}.${field}: ${asked} is above ${source} of ${limit}`, `${at}.${field}`);
    }
  }
}

/**
 * A run's context budget may be smaller than its tenant's, not larger (a larger one spends more of the
 * operator's model), and it may ask for summaries only where the tenant has a guard model to make them.
 */
function refuseContextAboveLimits(tenant: ServedTenant, asked: ContextOptions | undefined, at: string): void {
  if (!asked) return;
  const limits = tenant.config.runDefaults?.context ?? {};
  for (const field of ["maxTokens", "maxBytes"] as const) {
    const limit = limits[field];
    const value = asked[field];
    if (limit !== undefined && value !== undefined && value > limit)
      throw new ApiError(
        400,
        "ABOVE_TENANT_LIMIT",
        `${at}.${field}: ${value} is above the tenant's context.${field} of ${limit}`,
        `${at}.${field}`,
      );
  }
  if (asked.summarize && !tenant.config.capabilities?.guardModel)
    throw new ApiError(
      400,
      "VALIDATION",
      `${at}.summarize: tenant ${tenant.config.name} has no guard model to summarize with (its "guardModel" in the config)`,
      `${at}.summarize`,
    );
}
