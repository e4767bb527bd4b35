import type { Hono } from "hono";
import type { SessionManager } from "../session/manager.js";
import type { RunOptions } from "../host/types.js";
import { ApiError } from "./api-error.js";

type Env = { Variables: { tenant: string } };

/**
 * `GET /v1/usage?since=ISO`: the caller's tenant totals since a time (all time without `since`), summed from
 * the store's usage ledger, so they survive restarts and count every process that shares the store.
 */
export function registerUsageRoute(app: Hono<Env>, manager: SessionManager): void {
  app.get("/v1/usage", async (c) => {
    const raw = c.req.query("since");
    let sinceMs = 0;
    if (raw !== undefined) {
      sinceMs = /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(raw) : Number.NaN;
      if (Number.isNaN(sinceMs))
        throw new ApiError(
          400,
          "VALIDATION",
          `since: expected an ISO 8601 time such as 2026-11-01T00:00:00Z, got "${raw.slice(0, 40)}"`,
          "since",
        );
    }
    const tenant = c.get("tenant");
    const totals = await manager.store.usageTotals(tenant, sinceMs);
    return c.json({ tenant, since: new Date(sinceMs).toISOString(), until: new Date().toISOString(), ...totals });
  });
}

/**
 * A tenant's maxTokens / maxCostUsd are ceilings as well as defaults: a request may lower them, never raise
 * them past what the operator configured.
 */
export function withinTenantBudget<T extends Pick<RunOptions, "maxTokens" | "maxCostUsd">>(options: T, tenant: RunOptions | undefined): T {
  const clamped = { ...options };
  for (const key of ["maxTokens", "maxCostUsd"] as const) {
    const ceiling = tenant?.[key];
    const asked = clamped[key];
    if (ceiling !== undefined && asked !== undefined && asked > ceiling) clamped[key] = ceiling;
  }
  return clamped;
}
