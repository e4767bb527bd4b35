import { isIPv4, isIPv6 } from "node:net";

/*
 * IP addresses as ctx.fetch sees them (docs/capabilities.md, "Where a name may lead"): every address is held
 * as 16 bytes (an IPv4 address as its IPv4-mapped IPv6 form), so one classifier covers both families and
 * every IPv6 form that carries an IPv4 address inside (mapped, compatible, NAT64, 6to4) is judged by the
 * IPv4 address it leads to.
 */

/** What an address is, as far as egress cares: only `public` is reachable without an allowance. */
export type AddressClass = "public" | "loopback" | "private" | "link-local" | "unique-local" | "multicast" | "unspecified" | "reserved";

/** An address or network prefix as 16 bytes; an IPv4 one is IPv4-mapped (::ffff:a.b.c.d). */
export type AddressBytes = Uint8Array;

/** A network: its first address and the prefix length in bits, counted in the 128-bit space. */
export interface Cidr {
  base: AddressBytes;
  bits: number;
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function mapped(a: number, b: number, c: number, d: number): AddressBytes {
  return Uint8Array.from([...MAPPED_PREFIX, a, b, c, d]);
}

/** Strips URL brackets (`[::1]`) and an IPv6 zone (`fe80::1%eth0`). */
function bare(text: string): string {
  const unbracketed = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = unbracketed.indexOf("%");
  return zone >= 0 && unbracketed.includes(":") ? unbracketed.slice(0, zone) : unbracketed;
}

/** The address's 16 bytes, or undefined when `text` is not an IP address (a host name). */
export function parseAddress(text: string): AddressBytes | undefined {
  const address = bare(text);
  if (isIPv4(address)) {
    const [a, b, c, d] = address.split(".").map(Number);
    return mapped(a, b, c, d);
  }
  if (!isIPv6(address)) return undefined;
  return parseIpv6(address);
}

function parseIpv6(address: string): AddressBytes {
  let text = address;
  const tail: number[] = [];
  // A trailing dotted quad (::ffff:1.2.3.4) is the last 32 bits.
  const dotted = /:(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, dotted.index + 1);
    if (!text.endsWith("::")) text = text.slice(0, -1);
  }
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((group) => parseInt(group, 16)));
  const gap = text.indexOf("::");
  const front = groups(gap < 0 ? text : text.slice(0, gap));
  const back = [...(gap < 0 ? [] : groups(text.slice(gap + 2))), ...tail];
  const words = [...front, ...Array(8 - front.length - back.length).fill(0), ...back];
  const bytes = new Uint8Array(16);
  words.forEach((word, index) => {
    bytes[index * 2] = word >> 8;
    bytes[index * 2 + 1] = word & 0xff;
  });
  return bytes;
}

/** The IPv4 address an IPv6 form leads to (mapped, compatible, NAT64 64:ff9b::/96, 6to4 2002::/16), as mapped bytes. */
export function embeddedIpv4(bytes: AddressBytes): AddressBytes | undefined {
  if (startsWith(bytes, MAPPED_PREFIX)) return bytes;
  if (startsWith(bytes, Array(12).fill(0))) return mapped(bytes[12], bytes[13], bytes[14], bytes[15]);
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return mapped(bytes[12], bytes[13], bytes[14], bytes[15]);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return mapped(bytes[2], bytes[3], bytes[4], bytes[5]);
  return undefined;
}

function startsWith(bytes: AddressBytes, prefix: number[]): boolean {
  return prefix.every((value, index) => bytes[index] === value);
}

/** The class of an IPv4 address (RFC 6890's special-purpose registry, coarsened to what egress needs). */
function classifyIpv4(a: number, b: number, c: number): AddressClass {
  if (a === 0) return "unspecified"; // "this network": Linux connects 0.0.0.0 to the host itself
  if (a === 127) return "loopback";
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return "private";
  if (a === 100 && b >= 64 && b <= 127) return "private"; // carrier-grade NAT (RFC 6598)
  if (a === 169 && b === 254) return "link-local"; // cloud metadata services live here
  if (a >= 224 && a <= 239) return "multicast";
  if (a >= 240) return "reserved"; // 255.255.255.255, the broadcast address, included
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return "reserved"; // IETF assignments, TEST-NET-1
  if (a === 192 && b === 88 && c === 99) return "reserved"; // the old 6to4 relay anycast
  if (a === 198 && (b === 18 || b === 19)) return "reserved"; // benchmarking
  if ((a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113)) return "reserved"; // documentation
  return "public";
}

/** The class of an address; an IPv6 form carrying an IPv4 address is judged by that address when it is not public. */
export function classifyAddress(bytes: AddressBytes): AddressClass {
  if (startsWith(bytes, MAPPED_PREFIX)) return classifyIpv4(bytes[12], bytes[13], bytes[14]);
  if (bytes.every((value) => value === 0)) return "unspecified";
  if (bytes.slice(0, 15).every((value) => value === 0) && bytes[15] === 1) return "loopback";
  const embedded = embeddedIpv4(bytes);
  if (embedded) {
    const inner = classifyIpv4(embedded[12], embedded[13], embedded[14]);
    if (inner !== "public") return inner;
    // IPv4-compatible addresses (::a.b.c.d) are deprecated (RFC 4291): nothing legitimate is reached through one.
    return bytes[0] === 0 && bytes[1] === 0 && bytes[2] === 0 && bytes[3] === 0 ? "reserved" : "public";
  }
  if (bytes[0] === 0xff) return "multicast";
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80) return "link-local";
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0xc0) return "private"; // site-local, deprecated
  if ((bytes[0] & 0xfe) === 0xfc) return "unique-local";
  // Global unicast is 2000::/3; everything else (64:ff9b:1::/48 local NAT64, 100::/64 discard, ...) is special.
  if ((bytes[0] & 0xe0) !== 0x20) return "reserved";
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] < 0x02) return "reserved"; // 2001::/23: Teredo, ORCHID, benchmarking
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] === 0x0d && bytes[3] === 0xb8) return "reserved"; // documentation
  if (bytes[0] === 0x3f && bytes[1] === 0xff && (bytes[2] & 0xf0) === 0) return "reserved"; // documentation (RFC 9637)
  return "public";
}

/** Parses `10.0.0.0/8` or `fd00::/8`; undefined when malformed or when bits below the prefix are set. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const address = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const base = parseAddress(address);
  if (base === undefined || address.startsWith("[")) return undefined;
  const prefix = Number(prefixText);
  const ipv4 = isIPv4(address);
  if (prefix > (ipv4 ? 32 : 128)) return undefined;
  const bits = ipv4 ? prefix + 96 : prefix;
  for (let bit = bits; bit < 128; bit++) if ((base[bit >> 3] >> (7 - (bit & 7))) & 1) return undefined;
  return { base, bits };
}

export function inCidr(bytes: AddressBytes, cidr: Cidr): boolean {
  for (let bit = 0; bit < cidr.bits; bit++) {
    const mask = 1 << (7 - (bit & 7));
    if ((bytes[bit >> 3] & mask) !== (cidr.base[bit >> 3] & mask)) return false;
  }
  return true;
}

/** What an egress entry allows besides public addresses: everything (`true`), or the listed networks. */
export type AddressAllowance = true | Cidr[];

/** True when the address may be connected to under the allowance: public, allowed wholesale, or inside a listed network. */
export function addressAllowed(bytes: AddressBytes, allowance: AddressAllowance | undefined): boolean {
  if (classifyAddress(bytes) === "public" || allowance === true) return true;
  if (allowance === undefined) return false;
  const embedded = embeddedIpv4(bytes);
  return allowance.some((cidr) => inCidr(bytes, cidr) || (embedded !== undefined && inCidr(embedded, cidr)));
}
