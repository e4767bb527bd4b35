import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/*
 * Short-lived tokens that let a browser's EventSource (which cannot send headers) read one run's event stream
 * without the tenant's API key in the URL: `GET /v1/runs/:runId/events?token=...`. A token names one run and
 * its tenant, expires, and is signed with a secret this process makes at start (tokens do not outlive it).
 */

export const DEFAULT_STREAM_TOKEN_TTL_MS = 5 * 60_000;
export const MAX_STREAM_TOKEN_TTL_MS = 60 * 60_000;

export class StreamTokens {
  private readonly secret = randomBytes(32);

  issue(runId: string, tenant: string, ttlMs: number, nowMs = Date.now()): { token: string; expiresMs: number } {
    const expiresMs = nowMs + ttlMs;
    const body = Buffer.from(JSON.stringify({ r: runId, t: tenant, e: expiresMs })).toString("base64url");
    return { token: `${body}.${this.sign(body)}`, expiresMs };
  }

  /** The token's tenant when it is this process's, for `runId`, and not expired; otherwise undefined. */
  verify(token: string, runId: string, nowMs = Date.now()): string | undefined {
    const dot = token.indexOf(".");
    if (dot < 1 || token.length > 1024) return undefined;
    const body = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), "base64url");
    const expected = Buffer.from(this.sign(body), "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let claims: { r?: unknown; t?: unknown; e?: unknown };
    try {
      claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
    } catch {
      return undefined;
    }
    if (claims.r !== runId || typeof claims.t !== "string" || typeof claims.e !== "number" || claims.e <= nowMs) return undefined;
    return claims.t;
  }

  private sign(body: string): string {
    return createHmac("sha256", this.secret).update(body).digest("base64url");
  }
}
