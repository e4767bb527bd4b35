import { lookup } from "node:dns/promises";
import { isIP, type LookupFunction } from "node:net";
import type { LookupOptions } from "node:dns";
import { Agent } from "undici";
import { HookboxError } from "../errors.js";
import { raceAbort } from "../loop/abortable.js";
import { addressAllowed, parseAddress } from "./addresses.js";
import { denied, type EgressRule } from "./egress.js";

/*
 * Where an egress entry's name may lead (docs/capabilities.md): the host resolves the name itself, checks
 * every address it gets against the entry (public, or allowed by its `allowPrivate`), and connects to
 * exactly those addresses. The HTTP client is given a connector whose lookup answers with the checked
 * addresses only, so no second resolution (a rebinding DNS answering differently the next time) decides
 * where the connection goes.
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to its addresses. */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

/** The operating system's resolver (getaddrinfo: /etc/hosts, then DNS), every address in its order. */
export const systemResolver: ResolveHost = async (hostname) =>
  (await lookup(hostname, { all: true, order: "verbatim" })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/**
 * The addresses a request to `url` (under `rule`) may connect to: a literal address as it is, a name as the
 * resolver answers it, and every one of them allowed by the rule; otherwise CAPABILITY_DENIED naming the
 * entry (never the addresses: a script must not map the operator's network through our refusals).
 */
export async function checkedAddresses(url: URL, rule: EgressRule, resolve: ResolveHost, signal: AbortSignal): Promise<ResolvedAddress[]> {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const family = isIP(host);
  let addresses: ResolvedAddress[];
  if (family !== 0) addresses = [{ address: host, family: family === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await raceAbort(resolve(host), signal);
    } catch (error) {
      if (signal.aborted) throw error;
      const code = (error as { code?: unknown }).code;
      throw new HookboxError(
        "CAPABILITY_FAILED",
        `ctx.fetch: ${url.href.slice(0, 2000)} failed: its host did not resolve (${typeof code === "string" ? code : "no address"})`,
      );
    }
    if (addresses.length === 0)
      throw new HookboxError("CAPABILITY_FAILED", `ctx.fetch: ${url.href.slice(0, 2000)} failed: its host resolved to no address`);
  }
  for (const { address } of addresses) {
    const bytes = parseAddress(address);
    if (bytes === undefined || !addressAllowed(bytes, rule.allowance))
      throw denied(
        url,
        `its host resolves to an address the egress entry ${rule.source} does not allow (loopback, private, link-local and other non-public addresses need "allowPrivate" on the entry)`,
      );
  }
  return addresses;
}

/** A dispatcher for one request that connects only to `addresses` (checked), whatever DNS says by then. */
export function pinnedDispatcher(addresses: ResolvedAddress[]): Agent {
  const [first] = addresses;
  return new Agent({
    connect: {
      lookup: ((_hostname: string, options: LookupOptions, callback: (...args: unknown[]) => void) => {
        if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      }) as LookupFunction,
    },
  });
}
