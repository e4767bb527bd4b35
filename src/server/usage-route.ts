import type { Hono } from "hono";
import { z } from "zod";
import type { SessionManager } from "../session/manager.js";
import { parseSince } from "../contracts/since.js";
import { ApiError } from "./api-error.js";

type Env = { Variables: { tenant: string } };

/** What GET /v1/usage answers (the OpenAPI document names this schema). */
export const UsageReport = z.object({
  tenant: z.string(),
  since: z.string().meta({ description: "ISO time the totals start from (1970 without `since`)" }),
  until: z.string().meta({ description: "ISO time of the answer" }),
  runs: z.number().int().meta({ description: "runs started" }),
  inferences: z.number().int(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  tokens: z.number().int().meta({ description: "inputTokens + outputTokens" }),
  costUsd: z.number().meta({ description: "by the tenant's pricing; 0 for unpriced models" }),
  toolCalls: z.number().int().meta({ description: "tool executions, retries included" }),
  sandboxCpuMs: z.number().meta({ description: "CPU of the tenant's sandboxed callbacks, recorded as runs end" }),
  storedBytes: z.number().int().meta({ description: "bytes the tenant keeps in the store now (what its maxStoreBytes quota counts)" }),
});

/**
 * `GET /v1/usage?since=ISO`: the caller's tenant totals since a time (all time without `since`), summed from
 * the store's usage ledger, so they survive restarts and count every process that shares the store.
 */
export function registerUsageRoute(app: Hono<Env>, manager: SessionManager): void {
  app.get("/v1/usage", async (c) => {
    const raw = c.req.query("since");
    let sinceMs = 0;
    if (raw !== undefined) {
      const since = parseSince(raw);
      if ("problem" in since) throw new ApiError(400, "VALIDATION", `since: ${since.problem}`, "since");
      sinceMs = since.ms;
    }
    const tenant = c.get("tenant");
    const totals = await manager.store.usageTotals(tenant, sinceMs);
    const report: z.infer<typeof UsageReport> = {
      tenant,
      since: new Date(sinceMs).toISOString(),
      until: new Date().toISOString(),
      ...totals,
      storedBytes: (await manager.store.tenantUsage(tenant)).storedBytes,
    };
    return c.json(report);
  });
}
