import { z } from "zod";
import { HookboxError } from "../errors.js";
import type { EgressEntry, EgressHeader } from "./grants.js";
import { addressAllowed, parseAddress, parseCidr, type AddressAllowance } from "./addresses.js";

/*
 * The egress list: which URLs ctx.fetch may reach. Both the entries and every requested URL (and every
 * redirect target) are parsed with the WHATWG URL parser first, so `..`, `%2e%2e`, default ports, case
 * and IDN spellings are compared in one canonical form. A URL is under an entry when scheme, host and
 * port are equal and its path equals the entry's path or continues it after a `/` (segment boundary:
 * `/v1` covers `/v1/x`, never `/v10`).
 */

/** An egress entry as configured: a URL, or `{url, headers: {name: {env, prefix?}}}`. */
export const EgressEntrySchema = z.union([
  z.string().min(1),
  z.strictObject({
    url: z.string().min(1),
    headers: z
      .record(
        z.string().min(1),
        z.strictObject({
          env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name"),
          prefix: z.string().optional(),
        }),
      )
      .optional(),
    allowPrivate: z.union([z.boolean(), z.array(z.string().min(1)).min(1).max(64)]).optional(),
  }),
]);

export interface EgressRule {
  /** As configured (error messages name it). */
  source: string;
  protocol: string;
  hostname: string;
  port: string;
  /** The entry's path without a trailing slash ("" for the whole origin). */
  path: string;
  headers: [name: string, header: EgressHeader][];
  /** Non-public addresses the entry's host may resolve to (`allowPrivate`); none when undefined. */
  allowance?: AddressAllowance;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function effectivePort(url: URL): string {
  return url.port || (url.protocol === "https:" ? "443" : "80");
}

/** Parses the configured entries; a bad one is a CONFIG error naming its index (`where`: the field). */
export function parseEgress(entries: (string | EgressEntry)[], where: string): EgressRule[] {
  return entries.map((entry, index) => {
    const field = `${where}[${index}]`;
    const source = typeof entry === "string" ? entry : entry.url;
    let url: URL;
    try {
      url = new URL(source);
    } catch {
      throw new HookboxError("CONFIG", `${field}: "${source}" is not a URL`, { field });
    }
    if (url.protocol !== "https:" && url.protocol !== "http:")
      throw new HookboxError("CONFIG", `${field}: "${source}": only http and https URLs can be granted`, { field });
    if (url.username || url.password)
      throw new HookboxError("CONFIG", `${field}: "${source}": a URL with credentials cannot be granted`, { field });
    if (url.search || url.hash)
      throw new HookboxError("CONFIG", `${field}: "${source}": an egress entry has no query or fragment`, { field });
    const headers: EgressRule["headers"] = [];
    for (const [name, header] of Object.entries(typeof entry === "string" ? {} : (entry.headers ?? {}))) {
      if (!HEADER_NAME.test(name)) throw new HookboxError("CONFIG", `${field}.headers: "${name}" is not a header name`, { field });
      headers.push([name.toLowerCase(), header]);
    }
    const allowance = typeof entry === "string" ? undefined : parseAllowance(entry.allowPrivate, field);
    // A literal address the entry does not allow could never be fetched: say so now, not at the first request.
    const literal = parseAddress(url.hostname);
    if (literal !== undefined && !addressAllowed(literal, allowance))
      throw new HookboxError(
        "CONFIG",
        `${field}: "${source}" names a non-public address; add "allowPrivate": true (or a list of CIDRs covering it) to the entry to allow it`,
        { field },
      );
    return {
      source,
      protocol: url.protocol,
      hostname: url.hostname,
      port: effectivePort(url),
      path: url.pathname.replace(/\/+$/, ""),
      headers,
      ...(allowance !== undefined ? { allowance } : {}),
    };
  });
}

function parseAllowance(value: boolean | string[] | undefined, field: string): AddressAllowance | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return true;
  return value.map((text, index) => {
    const cidr = parseCidr(text);
    if (cidr === undefined)
      throw new HookboxError(
        "CONFIG",
        `${field}.allowPrivate[${index}]: "${text}" is not a network in CIDR notation (10.0.0.0/8, fd00::/8; no bits set past the prefix)`,
        { field },
      );
    return cidr;
  });
}

/** The canonical URL a script asked for; userinfo, other schemes and encoded slashes are refused. */
export function parseRequestUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new HookboxError("CAPABILITY_INVALID", `ctx.fetch: "${raw.slice(0, 200)}" is not an absolute URL`);
  }
  if (url.username || url.password) throw denied(url, "a URL with credentials is never allowed");
  if (url.protocol !== "https:" && url.protocol !== "http:") throw denied(url, "only http and https can be fetched");
  // A server that decodes %2F or %5C inside a segment would see a path the prefix check never saw.
  if (/%2f|%5c/i.test(url.pathname)) throw denied(url, "an encoded slash or backslash in the path is never allowed");
  url.hash = "";
  return url;
}

/** The first entry the URL is under, or undefined. */
export function matchEgress(rules: EgressRule[], url: URL): EgressRule | undefined {
  const port = effectivePort(url);
  return rules.find(
    (rule) =>
      rule.protocol === url.protocol &&
      rule.hostname === url.hostname &&
      rule.port === port &&
      (rule.path === "" || url.pathname === rule.path || url.pathname.startsWith(rule.path + "/")),
  );
}

export function denied(url: URL | string, why: string): HookboxError {
  const shown = typeof url === "string" ? url : url.href;
  return new HookboxError("CAPABILITY_DENIED", `ctx.fetch: ${shown.slice(0, 2000)} is denied: ${why}`, { url: shown.slice(0, 2000) });
}
