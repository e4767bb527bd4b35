import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

/*
 * A request header, read from Node's own request where the app runs on @hono/node-server: its headers are parsed
 * already, and asking hono (`c.req.header`) builds a WHATWG Headers of all of them for every request. Elsewhere
 * (app.request() in tests, another runtime) it is read through the Request. `name` is lower case. Node keeps the
 * first of a repeated Authorization or Content-Type (the Request joins them with ", ") and joins other repeated
 * headers as the Request does.
 */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (!incoming) return c.req.header(name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** The API key a request presents: `Authorization: Bearer <key>`, else `X-Api-Key`; "" when it presents none. */
export function presentedKey(c: Context): string {
  const header = requestHeader(c, "authorization") ?? "";
  return header.startsWith("Bearer ") ? header.slice(7).trim() : (requestHeader(c, "x-api-key") ?? "");
}
