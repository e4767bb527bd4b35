import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { HookboxError } from "../errors.js";
import { isDescriptorExhaustion } from "./connections.js";

/** Every error response: `{error: {code, message, path?}}`. */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly path?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** Host errors that are the caller's doing map to 4xx; anything else is a server fault (500). */
const statusOfCode: Record<string, ContentfulStatusCode> = {
  SESSION_BUSY: 409,
  SESSION_FORKED: 409,
  NOT_RESUMABLE: 409,
  NOT_FOUND: 404,
  USAGE: 400,
  STORE_QUOTA: 403,
  // The server's storage, not the request: 507 Insufficient Storage, never the 500 of a bug.
  STORE_FULL: 507,
  // A shared store's database out of reach, or a run's owner node not answering: retry shortly.
  STORE_UNAVAILABLE: 503,
  OWNER_UNREACHABLE: 503,
  // The operator's scripts or models, not the request: served again once they load (docs/server.md, "Start-up").
  TENANT_UNAVAILABLE: 503,
  // A reload took the tenant out of the config while its request was in flight: its key no longer works.
  TENANT_REMOVED: 401,
};

let faults = 0;

/**
 * The server's error boundary. A caller's mistake is answered with its code and message (host paths taken out
 * by `redact`); a server fault is answered with its code and a reference only: its message can carry host
 * paths or internals, so the full text goes to the operator's stderr under the same reference.
 */
export function errorResponse(c: Context, error: unknown, redact: (text: string) => string = (text) => text): Response {
  if (error instanceof ApiError) {
    for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
    return c.json(
      { error: { code: error.code, message: redact(error.message), ...(error.path !== undefined ? { path: error.path } : {}) } },
      error.status,
    );
  }
  if (error instanceof HookboxError && Object.hasOwn(statusOfCode, error.code)) {
    const retryAfter = error.details.retryAfterSeconds;
    if (typeof retryAfter === "number") c.header("retry-after", String(retryAfter));
    return c.json({ error: { code: error.code, message: redact(error.message) } }, statusOfCode[error.code]);
  }
  // Out of descriptors is the server's load, not a bug: the request may be retried shortly.
  if (isDescriptorExhaustion(error)) {
    c.header("retry-after", "1");
    return c.json({ error: { code: "SERVER_BUSY", message: "the server is out of file descriptors for now; retry shortly" } }, 503);
  }
  const code = error instanceof HookboxError ? error.code : "INTERNAL";
  const reference = `fault-${process.pid}-${++faults}`;
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`hookbox serve: ${c.req.method} ${c.req.path}: ${code} (${reference}): ${detail}\n`);
  return c.json(
    { error: { code, message: `the server failed on this request (reference ${reference}; the operator's log has the details)` } },
    500,
  );
}
