import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import { ApiError } from "./api-error.js";
import { requestHeader } from "./request-headers.js";

/*
 * The request body limit (`maxBodyBytes`) and the reading of a body, on Node's own request where the app runs on
 * @hono/node-server: a request whose body is read straight from its IncomingMessage never becomes a WHATWG
 * Request with a web-stream body (an undici Request, a Headers, an AbortController and a stream per request, the
 * GETs included, which hono's bodyLimit made by asking for `c.req.raw.body`). Elsewhere (app.request() in tests,
 * another runtime) the body is read through the Request, with the same limit.
 */

const LIMIT = "hookbox.maxBodyBytes";

/** The limit as a middleware: a declared Content-Length over it is refused before anything reads the body. */
export function bodyLimit(maxBytes: number): MiddlewareHandler {
  return async (c, next) => {
    const declared = requestHeader(c, "content-length");
    if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes);
    c.set(LIMIT, maxBytes);
    await next();
  };
}

/** The body's bytes; a body longer than the limit (one sent without a Content-Length, or a lying one) is a 413. */
export async function readRequestBytes(c: Context): Promise<Uint8Array> {
  const maxBytes = c.get(LIMIT) as number | undefined;
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  // Untouched: nothing (such as the Request a route asked for) has started reading it.
  if (incoming && incoming.readableFlowing === null && !incoming.readableDidRead) return readIncoming(incoming, maxBytes);
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  if (maxBytes !== undefined && bytes.length > maxBytes) throw tooLarge(maxBytes);
  return bytes;
}

function readIncoming(incoming: IncomingMessage, maxBytes: number | undefined): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (error?: unknown) => {
      incoming.off("data", onData).off("end", onEnd).off("error", done).off("aborted", onAborted);
      if (error) reject(error);
      else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (maxBytes !== undefined && size > maxBytes) return done(tooLarge(maxBytes));
      chunks.push(chunk);
    };
    const onEnd = () => done();
    const onAborted = () => done(new Error("the client closed the request before its body ended"));
    incoming.on("data", onData).on("end", onEnd).on("error", done).on("aborted", onAborted);
  });
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(413, "BODY_TOO_LARGE", `the request body exceeds ${maxBytes} bytes`);
}
