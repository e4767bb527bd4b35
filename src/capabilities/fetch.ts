import { fetch, Headers, type Response } from "undici";
import { HookboxError } from "../errors.js";
import type { CapabilityLimits } from "./grants.js";
import { denied, matchEgress, parseRequestUrl, type EgressRule } from "./egress.js";
import { checkedAddresses, pinnedDispatcher, type ResolveHost } from "./egress-connect.js";
import { redactSecrets, secretHeaders } from "./egress-secrets.js";

/*
 * ctx.fetch on the host, with undici's fetch (the engine of Node's own). Each hop connects only to the
 * addresses checked for its entry (egress-connect.ts). Redirects are followed by hand (`redirect:
 * "manual"`) so every hop is checked against the egress list and gets the headers of the entry it is under
 * (never the previous hop's). The body is streamed and the read stops past the limit. Host-side header
 * values never reach the script: the script's own headers of those names are dropped, and any occurrence
 * of a secret in the response (an echoing server) is replaced before the answer leaves.
 */

export interface FetchRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface FetchAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers a script may not set: the transport's business. */
const TRANSPORT_HEADERS = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive", "upgrade", "te", "trailer"]);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const REDACTED = "[redacted]";

/**
 * Sends one hop once the egress list has allowed it: the response, or a rejection as a failed connection
 * rejects. The default connects only to the addresses checked for the hop's entry; `hookbox test` gives one that
 * answers from a case's canned responses (every other rule here still applies to them).
 */
export type FetchTransport = (
  url: URL,
  init: { method: string; headers: Headers; body: string | undefined; signal: AbortSignal; rule: EgressRule },
) => Promise<Response>;

export interface FetchDeps {
  rules: EgressRule[];
  limits: CapabilityLimits;
  env: NodeJS.ProcessEnv;
  /** The run's end: aborts a request in flight. */
  signal: AbortSignal;
  /** Host names to addresses (the system's resolver; tests give their own). */
  resolve: ResolveHost;
  /** How a hop is sent (default: to the checked addresses over the network). */
  transport?: FetchTransport;
}

/** Performs one ctx.fetch; `onUrl` learns each URL tried (the event names the last). */
export async function brokeredFetch(request: FetchRequest, deps: FetchDeps, onUrl: (url: string) => void): Promise<FetchAnswer> {
  let url = parseRequestUrl(request.url);
  onUrl(url.href);
  let method = (request.method ?? "GET").toUpperCase();
  let body = request.body;
  if (body !== undefined && Buffer.byteLength(body) > deps.limits.maxRequestBytes)
    throw new HookboxError("CAPABILITY_QUOTA", `ctx.fetch: the request body exceeds ${deps.limits.maxRequestBytes} bytes`);
  const timeout = AbortSignal.timeout(deps.limits.fetchTimeoutMs);
  const signal = AbortSignal.any([timeout, deps.signal]);
  const secrets: string[] = [];
  try {
    for (let hop = 0; ; hop++) {
      const rule = matchEgress(deps.rules, url);
      if (rule === undefined)
        throw denied(url, hop === 0 ? "it is not under any entry of the tenant's egress list" : "a redirect left the egress list");
      const headers = requestHeaders(request.headers, rule, deps.env, secrets);
      const { response, done } = await (deps.transport
        ? deps.transport(url, { method, headers, body, signal, rule }).then((response) => ({ response, done: () => {} }))
        : networkHop(url, rule, { method, headers, body, signal }, deps.resolve));
      const location = response.headers.get("location");
      if (REDIRECTS.has(response.status) && location !== null) {
        await response.body?.cancel();
        done();
        if (hop >= deps.limits.maxRedirects)
          throw new HookboxError(
            "CAPABILITY_QUOTA",
            `ctx.fetch: ${request.url.slice(0, 2000)}: more than ${deps.limits.maxRedirects} redirects`,
          );
        url = parseRequestUrl(new URL(location, url).href);
        onUrl(url.href);
        if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
          method = method === "HEAD" ? "HEAD" : "GET";
          body = undefined;
        }
        continue;
      }
      const text = await readBounded(response, deps.limits.maxResponseBytes, url).finally(done);
      const answerHeaders: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        answerHeaders[name] = redact(value, secrets);
      });
      return { status: response.status, headers: answerHeaders, body: redact(text, secrets) };
    }
  } catch (error) {
    if (error instanceof HookboxError) throw error;
    if (timeout.aborted)
      throw new HookboxError("CAPABILITY_TIMEOUT", `ctx.fetch: ${url.href} took longer than ${deps.limits.fetchTimeoutMs} ms`);
    if (deps.signal.aborted) throw new HookboxError("CANCELLED", `ctx.fetch: ${url.href}: the run ended`);
    // The cause's code only (ECONNREFUSED, a TLS error's): its message may name the addresses tried.
    const cause = (error as { cause?: { code?: unknown } }).cause;
    throw new HookboxError(
      "CAPABILITY_FAILED",
      `ctx.fetch: ${url.href} failed: ${typeof cause?.code === "string" ? cause.code : "the connection failed"}`,
    );
  }
}

/** One hop over the network, to the addresses checked for its entry; `done` frees the connection. */
async function networkHop(
  url: URL,
  rule: EgressRule,
  init: { method: string; headers: Headers; body: string | undefined; signal: AbortSignal },
  resolve: ResolveHost,
): Promise<{ response: Response; done: () => void }> {
  const dispatcher = pinnedDispatcher(await checkedAddresses(url, rule, resolve, init.signal));
  try {
    const response = await fetch(url, { ...init, redirect: "manual", dispatcher });
    return { response, done: () => void dispatcher.close().catch(() => {}) };
  } catch (error) {
    void dispatcher.destroy().catch(() => {});
    throw error;
  }
}

function requestHeaders(given: Record<string, string> | undefined, rule: EgressRule, env: NodeJS.ProcessEnv, secrets: string[]): Headers {
  const headers = new Headers();
  const hostSide = new Set(rule.headers.map(([name]) => name));
  for (const [name, value] of Object.entries(given ?? {})) {
    const lower = name.toLowerCase();
    if (hostSide.has(lower) || TRANSPORT_HEADERS.has(lower)) continue;
    try {
      headers.set(name, value);
    } catch {
      throw new HookboxError("CAPABILITY_INVALID", `ctx.fetch: header "${name.slice(0, 100)}" is not a valid header`);
    }
  }
  // Validated before they are set: Headers would quote an unusable value in its error.
  for (const [name, value] of secretHeaders(rule, env, secrets)) headers.set(name, value);
  return headers;
}

async function readBounded(response: Response, maxBytes: number, url: URL): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let received = 0;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    received += value.byteLength;
    if (received > maxBytes) {
      await reader.cancel();
      throw new HookboxError("CAPABILITY_QUOTA", `ctx.fetch: ${url.href}: the response body exceeds ${maxBytes} bytes`, {
        limitBytes: maxBytes,
      });
    }
    text += decoder.decode(value, { stream: true });
  }
}

function redact(text: string, secrets: string[]): string {
  return redactSecrets(text, secrets, REDACTED);
}
