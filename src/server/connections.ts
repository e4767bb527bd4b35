import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { Duplex } from "node:stream";

/*
 * What one client connection may hold of the server. Every open connection holds a file descriptor, and the
 * server needs descriptors of its own to work (the store, script sources, sandbox worker pipes, model and egress
 * connections): so connections are capped well below the process's descriptor limit, and a connection that
 * does not finish sending its request in time (idle, or a slowloris trickle) is answered 408 and closed.
 */

/** Share of the descriptor limit client connections may take; the rest is the server's own. */
const CONNECTION_SHARE = 0.75;
/** Used when the descriptor limit cannot be read (no procfs). */
const FALLBACK_MAX_CONNECTIONS = 768;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface ConnectionLimits {
  maxConnections: number;
  /** Time to receive a request's headers and body, ms. */
  requestTimeoutMs: number;
}

/** The process's soft limit on open files (`ulimit -n`), or undefined where it cannot be read. */
export function openFilesLimit(limitsText = readProcLimits()): number | undefined {
  const match = /^Max open files\s+(\d+|unlimited)\s/m.exec(limitsText ?? "");
  if (!match || match[1] === "unlimited") return undefined;
  return Number(match[1]);
}

function readProcLimits(): string | undefined {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return undefined;
  }
}

/**
 * The connection cap: the configured one, but never above three quarters of the descriptor limit (a config
 * written for one machine must not exhaust another's descriptors); without a configured one, that share.
 */
export function connectionLimits(
  configured: { maxConnections?: number; requestTimeoutMs?: number },
  descriptors = openFilesLimit(),
): ConnectionLimits {
  const ceiling = descriptors === undefined ? undefined : Math.max(1, Math.floor(descriptors * CONNECTION_SHARE));
  const wanted = configured.maxConnections ?? ceiling ?? FALLBACK_MAX_CONNECTIONS;
  return {
    maxConnections: ceiling === undefined ? wanted : Math.min(wanted, ceiling),
    requestTimeoutMs: configured.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
  };
}

/** Node's HTTP server options that enforce the request timeout (checked every second, not Node's 30 s). */
export function timeoutOptions(limits: ConnectionLimits): {
  headersTimeout: number;
  requestTimeout: number;
  connectionsCheckingInterval: number;
} {
  return {
    headersTimeout: limits.requestTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, limits.requestTimeoutMs),
  };
}

/** Connections past the cap are closed as soon as they are accepted (Node's `maxConnections`). */
export function applyConnectionCap(server: Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.maxConnections;
}

/** True when `error` (or a cause of it) is the process or the system running out of file descriptors. */
export function isDescriptorExhaustion(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    const { code, message, cause } = current as { code?: unknown; message?: unknown; cause?: unknown };
    if (code === "EMFILE" || code === "ENFILE") return true;
    if (typeof message === "string" && /\bE[MN]FILE\b|too many open files/i.test(message)) return true;
    current = cause;
  }
  return false;
}

/** What Node's HTTP parser refuses before the app sees a request, answered in the API's own error shape. */
const CLIENT_ERRORS: Record<string, { status: number; reason: string; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: "Request Header Fields Too Large",
    code: "HEADERS_TOO_LARGE",
    message: "the request line and headers exceed 16 KiB",
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: "Request Timeout",
    code: "REQUEST_TIMEOUT",
    message: "the request's headers and body did not arrive in time",
  },
};
const MALFORMED = { status: 400, reason: "Bad Request", code: "MALFORMED_REQUEST", message: "the request is not valid HTTP/1.1" };

/**
 * Requests Node's parser refuses (malformed, headers too large, too slow) are answered as JSON with the API's
 * error shape, like everything else, instead of Node's bare status line; then the connection is closed.
 */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
    const answer = CLIENT_ERRORS[error.code ?? ""] ?? MALFORMED;
    const body = JSON.stringify({ error: { code: answer.code, message: answer.message } });
    socket.end(
      `HTTP/1.1 ${answer.status} ${answer.reason}\r\ncontent-type: application/json; charset=UTF-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}
