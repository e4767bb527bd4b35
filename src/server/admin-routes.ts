import type { Hono, MiddlewareHandler } from "hono";
import { ApiError } from "./api-error.js";
import { sha256Hex } from "./config.js";
import { presentedKey } from "./request-headers.js";
import { isDescriptorExhaustion } from "./connections.js";
import type { LiveConfig } from "./live-config.js";
import type { MetricGauges, ServerMetrics } from "./metrics.js";

type Env = { Variables: { tenant: string } };

export interface AdminServices {
  live: LiveConfig;
  metrics: ServerMetrics;
  gauges: MetricGauges;
  /** Re-reads the config file; rejects (the old one kept) when the new one is refused. */
  reload(): Promise<{ tenants: string[] }>;
}

/**
 * The operator's routes, behind `server.adminKeys` (a tenant's key is refused, as an admin key is on a tenant's
 * routes): `GET /metrics` (Prometheus text) and `POST /v1/admin/reload`.
 */
export function registerAdminRoutes(app: Hono<Env>, services: AdminServices): void {
  const adminOnly: MiddlewareHandler<Env> = async (c, next) => {
    const key = presentedKey(c);
    if (!key) throw new ApiError(401, "UNAUTHORIZED", "missing operator key: send Authorization: Bearer <key of server.adminKeys>");
    if (!services.live.current.adminKeys.has(sha256Hex(key)))
      throw new ApiError(401, "UNAUTHORIZED", "not an operator key (server.adminKeys)");
    await next();
  };
  app.get("/metrics", adminOnly, async (c) => {
    c.header("content-type", "text/plain; version=0.0.4; charset=utf-8");
    return c.body(await services.metrics.render(services.gauges));
  });
  app.post("/v1/admin/reload", adminOnly, async (c) => {
    try {
      return c.json({ reloaded: true, ...(await services.reload()) });
    } catch (error) {
      // Out of descriptors, the server could not read or load the config: the host's state, not the config's fault.
      if (isDescriptorExhaustion(error)) throw reloadNotRead(error);
      throw new ApiError(400, "CONFIG", `the new config was refused; the old one stays: ${(error as Error).message}`);
    }
  });
}

/** A reload the server could not carry out for want of file descriptors: 503, the cause named, the old config kept. */
function reloadNotRead(error: unknown): ApiError {
  return new ApiError(
    503,
    "SERVER_BUSY",
    `the config was not reloaded: the server is out of file descriptors (${(error as Error).message}); the old config stays; retry shortly`,
    undefined,
    { "retry-after": "1" },
  );
}
