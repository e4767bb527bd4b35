import type { Context, MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { LiveConfig } from "./live-config.js";

/*
 * CORS for browser clients on other origins (`server.cors.origins`): only the listed origins get the headers, and
 * none at all when the list is empty (a same-origin page, like the web inspector, needs none). The list is read
 * per request, so a reload changes it.
 */
export function corsFor(live: LiveConfig): MiddlewareHandler {
  const handler = cors({
    origin: (origin) => (live.current.corsOrigins.includes(origin) ? origin : null),
    allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
    allowHeaders: ["authorization", "content-type", "last-event-id", "traceparent", "x-api-key"],
    exposeHeaders: ["retry-after"],
    maxAge: 600,
  });
  return async (c, next) => {
    if (live.current.corsOrigins.length === 0) return next();
    c.set(HEADERS_SET, true);
    return handler(c, next);
  };
}

const HEADERS_SET = "hookbox.responseHeadersSet";

/** True when a middleware may have set headers on the response before the route ran (c.res.headers holds them). */
export function responseHeadersSet(c: Context): boolean {
  return c.get(HEADERS_SET) === true;
}
