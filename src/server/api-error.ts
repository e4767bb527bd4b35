import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { HookboxError } from "../errors.js";

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
  NOT_RESUMABLE: 409,
  NOT_FOUND: 404,
  USAGE: 400,
};

export function errorResponse(c: Context, error: unknown): Response {
  if (error instanceof ApiError) {
    for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
    return c.json(
      { error: { code: error.code, message: error.message, ...(error.path !== undefined ? { path: error.path } : {}) } },
      error.status,
    );
  }
  if (error instanceof HookboxError && Object.hasOwn(statusOfCode, error.code)) {
    return c.json({ error: { code: error.code, message: error.message } }, statusOfCode[error.code]);
  }
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof HookboxError ? error.code : "INTERNAL";
  process.stderr.write(`hookbox serve: ${c.req.method} ${c.req.path}: ${code}: ${message}\n`);
  return c.json({ error: { code, message } }, 500);
}
