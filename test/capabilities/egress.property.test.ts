import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { BlockList } from "node:net";
import { addressAllowed, classifyAddress, embeddedIpv4, inCidr, parseAddress, parseCidr } from "../../src/capabilities/addresses.js";
import { matchEgress, parseEgress, parseRequestUrl } from "../../src/capabilities/egress.js";
import { isHookboxError } from "../../src/errors.js";
import { propertyParameters } from "../helpers/property.js";

/*
 * The classes of inputs, not instances: the address classifier against node's own BlockList as an oracle,
 * every textual form of an address parsed alike, and the egress matcher against a segment-wise reference
 * over URLs built from the pieces attackers use (dot and encoded segments, encoded slashes, backslashes,
 * ports, userinfo, case, look-alike hosts, `/apix` next to `/api`).
 */

const NON_PUBLIC_V4: [string, number][] = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];
const nonPublicV4 = new BlockList();
for (const [base, prefix] of NON_PUBLIC_V4) nonPublicV4.addSubnet(base, prefix, "ipv4");

/** IPv6 ranges that are not public, outside the forms that carry an IPv4 address. */
const nonPublicV6 = new BlockList();
for (const [base, prefix] of [
  ["2001::", 23],
  ["2001:db8::", 32],
  ["3fff::", 20],
] as [string, number][])
  nonPublicV6.addSubnet(base, prefix, "ipv6");
const globalUnicast = new BlockList();
globalUnicast.addSubnet("2000::", 3, "ipv6");

const v4Text = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
const v4Number = (text: string) => text.split(".").reduce((sum, part) => sum * 256 + Number(part), 0);

/**
 * Any IPv4 address, with the edges of every special range (first, last, and one past each) likely, and its
 * look-alikes: an address of the range with one octet replaced (192.1.99.7 beside 192.88.99.0/24), which a
 * rule that checks only some of the range's octets takes for the range.
 */
const ipv4 = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  fc.constantFrom(...NON_PUBLIC_V4).chain(([base, prefix]) => {
    const first = v4Number(base);
    const last = first + 2 ** (32 - prefix) - 1;
    return fc.constantFrom(first, last, Math.max(0, first - 1), Math.min(2 ** 32 - 1, last + 1), first + Math.floor((last - first) / 2));
  }),
  fc
    .tuple(fc.constantFrom(...NON_PUBLIC_V4), fc.nat(3), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 2 ** 32 - 1 }))
    .map(([[base, prefix], octet, value, low]) => {
      const inRange = (v4Number(base) + (low % 2 ** (32 - prefix))) >>> 0;
      const shift = 8 * (3 - octet);
      return ((inRange & ~(0xff << shift)) | (value << shift)) >>> 0;
    }),
);

const hexWords = (bytes: Uint8Array) => Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16));

/** IPv6 addresses, most of them inside one of the prefixes that matter. */
const PREFIXES: [number[], number][] = [
  [[0x20], 3],
  [[0x20, 0x01], 16],
  [[0x20, 0x01, 0x0d, 0xb8], 32],
  [[0x20, 0x02], 16],
  [[0x3f, 0xff], 16],
  [[0xfc], 7],
  [[0xfe, 0x80], 10],
  [[0xfe, 0xc0], 10],
  [[0xff], 8],
  [[0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 96],
  [[0, 0x64, 0xff, 0x9b, 0, 1], 48],
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 96],
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 96],
  [[], 0],
];
const ipv6 = fc.tuple(fc.constantFrom(...PREFIXES), fc.uint8Array({ minLength: 16, maxLength: 16 })).map(([[prefix, bits], random]) => {
  const bytes = Uint8Array.from(random);
  for (let bit = 0; bit < bits; bit++) {
    const mask = 1 << (7 - (bit % 8));
    const want = (prefix[bit >> 3] ?? 0) & mask;
    bytes[bit >> 3] = (bytes[bit >> 3] & ~mask) | want;
  }
  return bytes;
});

describe("the address classifier (property)", () => {
  it("an IPv4 address is public exactly when no special range holds it, in every IPv6 form that carries it", () => {
    fc.assert(
      fc.property(ipv4, (n) => {
        const text = v4Text(n);
        const expected = nonPublicV4.check(text, "ipv4") ? "non-public" : "public";
        const kind = (address: string) => (classifyAddress(parseAddress(address)!) === "public" ? "public" : "non-public");
        const hex = `${((n >>> 16) & 0xffff).toString(16)}:${(n & 0xffff).toString(16)}`;
        expect(kind(text)).toBe(expected);
        expect(kind(`::ffff:${text}`)).toBe(expected);
        expect(kind(`[::ffff:${hex}]`)).toBe(expected);
        expect(kind(`64:ff9b::${text}`)).toBe(expected);
        expect(kind(`2002:${hex}::1`)).toBe(expected);
        // The deprecated IPv4-compatible form leads nowhere legitimate: never public.
        if (n > 1) expect(kind(`::${text}`)).toBe("non-public");
      }),
      propertyParameters(3000),
    );
  });

  it("an IPv6 address is public exactly when it is global unicast outside the special blocks (or carries a public IPv4)", () => {
    fc.assert(
      fc.property(ipv6, (bytes) => {
        const text = hexWords(bytes).join(":");
        const parsed = parseAddress(text)!;
        expect(Array.from(parsed)).toEqual(Array.from(bytes));
        const embedded = embeddedIpv4(bytes);
        // ::/96 (IPv4-compatible, and :: and ::1) is never public; other carriers are judged by their IPv4 address.
        const compatible = bytes.slice(0, 12).every((b) => b === 0);
        const expected = compatible
          ? false
          : embedded
            ? !nonPublicV4.check(embedded.slice(12).join("."), "ipv4")
            : globalUnicast.check(text, "ipv6") && !nonPublicV6.check(text, "ipv6");
        expect(classifyAddress(parsed) === "public", text).toBe(expected);
      }),
      propertyParameters(3000),
    );
  });

  it("every spelling of an address parses to the same bytes", () => {
    fc.assert(
      fc.property(ipv6, (bytes) => {
        const full = hexWords(bytes).join(":");
        const canonical = new URL(`http://[${full}]/`).hostname; // the WHATWG serializer: compressed, bracketed
        const padded = hexWords(bytes)
          .map((word) => word.padStart(4, "0").toUpperCase())
          .join(":");
        for (const text of [full, canonical, padded, `${full}%eth0`])
          expect(Array.from(parseAddress(text) ?? []), text).toEqual(Array.from(bytes));
      }),
      propertyParameters(2000),
    );
  });

  it("a network holds exactly the addresses that share its prefix; an allowance adds only its networks", () => {
    fc.assert(
      fc.property(ipv6, ipv6, fc.integer({ min: 0, max: 128 }), (address, other, bits) => {
        const base = Uint8Array.from(address);
        for (let bit = bits; bit < 128; bit++) base[bit >> 3] &= ~(1 << (7 - (bit % 8)));
        const cidr = parseCidr(`${hexWords(base).join(":")}/${bits}`)!;
        expect(cidr).toBeDefined();
        expect(inCidr(address, cidr)).toBe(true);
        const list = new BlockList();
        list.addSubnet(hexWords(base).join(":"), bits, "ipv6");
        expect(inCidr(other, cidr)).toBe(list.check(hexWords(other).join(":"), "ipv6"));
        const publicOther = classifyAddress(other) === "public";
        expect(addressAllowed(other, undefined)).toBe(publicOther);
        expect(addressAllowed(other, true)).toBe(true);
        if (!embeddedIpv4(other)) expect(addressAllowed(other, [cidr])).toBe(publicOther || inCidr(other, cidr));
        // Bits set past the prefix are a typo, refused.
        if (bits < 128 && address.some((_, i) => address[i] !== base[i]))
          expect(parseCidr(`${hexWords(address).join(":")}/${bits}`)).toBeUndefined();
      }),
      propertyParameters(2000),
    );
  });
});

const HOSTS = ["api.example.com", "API.Example.COM", "api.example.com.evil.test", "evil.test", "apiexample.com", "xn--bcher-kva.example"];
const SEGMENTS = [
  "v1",
  "api",
  "x",
  "apix",
  "v10",
  "..",
  ".",
  "%2e",
  "%2E%2e",
  ".%2E",
  "%2f",
  "%2F",
  "%5c",
  "%5C",
  "\\",
  "",
  "a%20b",
  "~u",
  "API",
  "v1-admin",
];

const entryArbitrary = fc.record({
  secure: fc.boolean(),
  host: fc.constantFrom("api.example.com", "xn--bcher-kva.example"),
  port: fc.constantFrom("", ":8443"),
  segments: fc.array(fc.constantFrom("v1", "api", "x"), { maxLength: 3 }),
  slash: fc.boolean(),
});

const extraSegments = fc.array(fc.oneof(fc.constantFrom(...SEGMENTS), fc.stringMatching(/^[a-z0-9%.~-]{0,6}$/)), { maxLength: 4 });

/** A request built from an entry the way an attacker would: the entry's own pieces, bent a little, most of the time. */
const requestArbitrary = (entry: { secure: boolean; host: string; port: string; segments: string[] }) =>
  fc.record({
    scheme: fc.oneof(
      { weight: 4, arbitrary: fc.constant(entry.secure ? "https" : "http") },
      { weight: 1, arbitrary: fc.constantFrom("http", "https", "HTTPS", "Http", "ftp") },
    ),
    userinfo: fc.constantFrom("", "", "", "", "user@", "user:pw@", ":@"),
    host: fc.oneof(
      { weight: 4, arbitrary: fc.constant(entry.host) },
      { weight: 1, arbitrary: fc.constant(entry.host.toUpperCase()) },
      { weight: 1, arbitrary: fc.constantFrom(...HOSTS) },
    ),
    port: fc.oneof(
      { weight: 3, arbitrary: fc.constant(entry.port) },
      { weight: 1, arbitrary: fc.constantFrom("", ":443", ":80", ":8443", ":0443") },
    ),
    segments: fc
      .tuple(
        fc.integer({ min: 0, max: entry.segments.length }),
        fc.constantFrom("", "", "x", "-admin", "%2e%2e", ".", "%2F"),
        extraSegments,
      )
      .map(([kept, bend, extra]) => {
        const path = entry.segments.slice(0, kept);
        if (path.length) path[path.length - 1] += bend;
        return [...path, ...extra];
      }),
    query: fc.constantFrom("", "?a=1", "?next=/v1/../admin"),
    fragment: fc.constantFrom("", "#x"),
  });

/** The reference: the path's segments begin with the entry's (compared as lists, not as strings). */
function segmentsUnder(entryPath: string, path: string): boolean {
  const entry = entryPath.split("/");
  if (entry.at(-1) === "") entry.pop();
  const request = path.split("/");
  return entry.every((segment, index) => request[index] === segment);
}

describe("the egress matcher (property)", () => {
  it("a URL is under an entry exactly when scheme, host and port are equal and its segments begin with the entry's", () => {
    fc.assert(
      fc.property(
        entryArbitrary.chain((entry) => fc.tuple(fc.constant(entry), requestArbitrary(entry))),
        ([entry, request]) => {
          const entryUrl = `${entry.secure ? "https" : "http"}://${entry.host}${entry.port}/${entry.segments.join("/")}${entry.slash && entry.segments.length ? "/" : ""}`;
          const [rule] = parseEgress([entryUrl], "egress");
          const text = `${request.scheme}://${request.userinfo}${request.host}${request.port}/${request.segments.join("/")}${request.query}${request.fragment}`;
          let canonical: URL;
          try {
            canonical = new URL(text);
          } catch {
            expect(() => parseRequestUrl(text)).toThrow(/is not an absolute URL/);
            return;
          }
          let parsed: URL;
          try {
            parsed = parseRequestUrl(text);
          } catch (error) {
            expect(isHookboxError(error) && error.code).toBe("CAPABILITY_DENIED");
            const refused =
              canonical.username !== "" ||
              canonical.password !== "" ||
              !["http:", "https:"].includes(canonical.protocol) ||
              /%2f|%5c/i.test(canonical.pathname);
            expect(refused, text).toBe(true);
            return;
          }
          expect(parsed.username + parsed.password).toBe("");
          expect(parsed.pathname).not.toMatch(/%2f|%5c/i);
          const wanted = new URL(entryUrl);
          const port = (url: URL) => url.port || (url.protocol === "https:" ? "443" : "80");
          const expected =
            parsed.protocol === wanted.protocol &&
            parsed.hostname === wanted.hostname &&
            port(parsed) === port(wanted) &&
            segmentsUnder(wanted.pathname, parsed.pathname);
          expect(matchEgress([rule], parsed) === rule, `${text} under ${entryUrl}`).toBe(expected);
          // What is sent is what was checked: no fragment, and a path that stays under the entry.
          expect(parsed.hash).toBe("");
          if (expected) expect(parsed.href.startsWith(wanted.origin)).toBe(true);
        },
      ),
      propertyParameters(4000),
    );
  });

  it("a sibling path is never under an entry: /apix, /api-admin and /api.. are not under /api", () => {
    fc.assert(
      fc.property(fc.constantFrom("/api", "/v1/api", "/x"), fc.stringMatching(/^[A-Za-z0-9._~%-]{1,8}$/), (path, tail) => {
        const [rule] = parseEgress([`https://api.example.com${path}`], "egress");
        let matched: boolean;
        try {
          matched = matchEgress([rule], parseRequestUrl(`https://api.example.com${path}${tail}`)) !== undefined;
        } catch (error) {
          matched = !(isHookboxError(error) && error.code === "CAPABILITY_DENIED");
        }
        expect(matched, `${path}${tail}`).toBe(false);
      }),
      propertyParameters(2000),
    );
  });
});
