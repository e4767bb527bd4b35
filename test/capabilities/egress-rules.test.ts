import { describe, expect, it } from "vitest";
import { addressAllowed, classifyAddress, parseAddress, parseCidr } from "../../src/capabilities/addresses.js";
import { checkedAddresses, systemResolver, type ResolveHost } from "../../src/capabilities/egress-connect.js";
import { EgressEntrySchema, denied, matchEgress, parseEgress, parseRequestUrl } from "../../src/capabilities/egress.js";
import type { EgressEntry } from "../../src/capabilities/grants.js";
import { thrownHookboxError } from "../helpers/thrown.js";

/*
 * The egress list's rules one by one, in the test's own process (src/capabilities/egress.ts, the parsing half
 * of addresses.ts, egress-connect.ts's checks): what an entry becomes, which entries and requested URLs are
 * refused and with which message, which entry a URL is under, and which addresses a request may connect to.
 * The classes of inputs (every address, every URL spelling): egress.property.test.ts.
 */

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

const one = (entry: string | EgressEntry) => parseEgress([entry], "egress")[0]!;

describe("EgressEntrySchema", () => {
  it.each<[unknown, boolean]>([
    ["https://x/", true],
    ["", false],
    [{ url: "https://x/" }, true],
    [{ url: "" }, false],
    [{ url: "https://x/", headers: { a: { env: "GUARD_KEY_2" } } }, true],
    [{ url: "https://x/", headers: { a: { env: "_k", prefix: "Bearer " } } }, true],
    [{ url: "https://x/", headers: { "": { env: "K" } } }, false],
    [{ url: "https://x/", headers: { a: { env: "1K" } } }, false],
    [{ url: "https://x/", headers: { a: { env: "K-1" } } }, false],
    [{ url: "https://x/", headers: { a: { env: "" } } }, false],
    [{ url: "https://x/", headers: { a: { env: "K", other: 1 } } }, false],
    [{ url: "https://x/", other: 1 }, false],
    [{ url: "https://x/", allowPrivate: true }, true],
    [{ url: "https://x/", allowPrivate: false }, true],
    [{ url: "https://x/", allowPrivate: ["10.0.0.0/8"] }, true],
    [{ url: "https://x/", allowPrivate: [] }, false],
    [{ url: "https://x/", allowPrivate: [""] }, false],
    [{ url: "https://x/", allowPrivate: Array(64).fill("10.0.0.0/8") }, true],
    [{ url: "https://x/", allowPrivate: Array(65).fill("10.0.0.0/8") }, false],
    [{ url: "https://x/", allowPrivate: "10.0.0.0/8" }, false],
  ])("%j is %s", (entry, valid) => {
    expect(EgressEntrySchema.safeParse(entry).success).toBe(valid);
  });

  it("an environment variable name that is not one says so", () => {
    const result = EgressEntrySchema.safeParse({ url: "https://x/", headers: { a: { env: "1K" } } });
    expect(JSON.stringify(result.error?.issues)).toContain("must be an environment variable name");
  });
});

describe("parseEgress", () => {
  it("an entry becomes its scheme, host, effective port and path without trailing slashes", () => {
    expect(one("https://API.Example.com/v1/")).toEqual({
      source: "https://API.Example.com/v1/",
      protocol: "https:",
      hostname: "api.example.com",
      port: "443",
      path: "/v1",
      headers: [],
    });
    expect(one("http://api.example.com")).toMatchObject({ protocol: "http:", port: "80", path: "" });
    expect(one("http://api.example.com:8080/a/b//")).toMatchObject({ port: "8080", path: "/a/b" });
    expect(one("https://api.example.com:443/")).toMatchObject({ port: "443", path: "" });
  });

  it("an entry's header names are lower-cased in their order; an allowance is kept only when given", () => {
    const rule = one({ url: "https://x.example/", headers: { "X-Api-Key": { env: "A" }, Authorization: { env: "B", prefix: "Bearer " } } });
    expect(rule.headers).toEqual([
      ["x-api-key", { env: "A" }],
      ["authorization", { env: "B", prefix: "Bearer " }],
    ]);
    expect("allowance" in one({ url: "https://x.example/" })).toBe(false);
    expect("allowance" in one({ url: "https://x.example/", allowPrivate: false })).toBe(false);
    expect(one({ url: "https://x.example/", allowPrivate: true }).allowance).toBe(true);
    expect(one({ url: "https://x.example/", allowPrivate: ["10.1.0.0/16", "fd00::/8"] }).allowance).toEqual([
      parseCidr("10.1.0.0/16"),
      parseCidr("fd00::/8"),
    ]);
  });

  it.each<[string | EgressEntry, string]>([
    ["nope", 'egress[0]: "nope" is not a URL'],
    ["ftp://x.example/", 'egress[0]: "ftp://x.example/": only http and https URLs can be granted'],
    ["https://user@x.example/", 'egress[0]: "https://user@x.example/": a URL with credentials cannot be granted'],
    ["https://:pw@x.example/", 'egress[0]: "https://:pw@x.example/": a URL with credentials cannot be granted'],
    ["https://x.example/?a=1", 'egress[0]: "https://x.example/?a=1": an egress entry has no query or fragment'],
    ["https://x.example/#top", 'egress[0]: "https://x.example/#top": an egress entry has no query or fragment'],
    [{ url: "https://x.example/", headers: { "x key": { env: "K" } } }, 'egress[0].headers: "x key" is not a header name'],
    [{ url: "https://x.example/", headers: { "@x": { env: "K" } } }, 'egress[0].headers: "@x" is not a header name'],
    [{ url: "https://x.example/", headers: { "x:y": { env: "K" } } }, 'egress[0].headers: "x:y" is not a header name'],
    [
      { url: "https://x.example/", allowPrivate: ["10.0.0.0/8", "10.0.0.1/8"] },
      'egress[0].allowPrivate[1]: "10.0.0.1/8" is not a network in CIDR notation (10.0.0.0/8, fd00::/8; no bits set past the prefix)',
    ],
  ])("refuses %j: CONFIG %s", (entry, message) => {
    expect(thrownHookboxError(() => parseEgress([entry], "egress"))).toMatchObject({
      code: "CONFIG",
      message,
      details: { field: "egress[0]" },
    });
  });

  it("a header name made of token characters only is accepted", () => {
    expect(one({ url: "https://x.example/", headers: { "!#$%&'*+.^_`|~0-9azAZ-": { env: "K" } } }).headers).toHaveLength(1);
  });

  it("names the index of the bad entry among good ones", () => {
    expect(thrownHookboxError(() => parseEgress(["https://a.example/", "https://b.example/", "nope"], "tenant acme: egress")).message).toBe(
      'tenant acme: egress[2]: "nope" is not a URL',
    );
  });

  it("an entry naming a non-public address literally needs an allowance covering it", () => {
    const why = 'names a non-public address; add "allowPrivate": true (or a list of CIDRs covering it) to the entry to allow it';
    for (const url of ["http://127.0.0.1:8080/", "http://[::1]/", "http://2130706433/", "http://10.1.2.3/", "http://[fe80::1]/"])
      expect(
        thrownHookboxError(() => one(url)),
        url,
      ).toMatchObject({
        code: "CONFIG",
        message: `egress[0]: "${url}" ${why}`,
        details: { field: "egress[0]" },
      });
    expect(thrownHookboxError(() => one({ url: "http://10.2.0.1/", allowPrivate: ["10.1.0.0/16"] })).message).toContain(why);
    expect(one({ url: "http://10.1.2.3/", allowPrivate: ["10.1.0.0/16"] }).hostname).toBe("10.1.2.3");
    expect(one({ url: "http://[::1]/", allowPrivate: true }).hostname).toBe("[::1]");
    expect(one("http://8.8.8.8/").hostname).toBe("8.8.8.8");
    expect(one("http://[2001:4860::8888]/").hostname).toBe("[2001:4860::8888]");
  });
});

describe("parseRequestUrl", () => {
  it("a URL that is not absolute is CAPABILITY_INVALID quoting at most 200 characters of it", () => {
    expect(thrownHookboxError(() => parseRequestUrl("/v1/x"))).toMatchObject({
      code: "CAPABILITY_INVALID",
      message: 'ctx.fetch: "/v1/x" is not an absolute URL',
    });
    expect(thrownHookboxError(() => parseRequestUrl(`/${"a".repeat(300)}`)).message).toBe(
      `ctx.fetch: "/${"a".repeat(199)}" is not an absolute URL`,
    );
  });

  it.each([
    ["https://user@x.example/v1", "a URL with credentials is never allowed"],
    ["https://:pw@x.example/v1", "a URL with credentials is never allowed"],
    ["ftp://x.example/v1", "only http and https can be fetched"],
    ["file:///etc/passwd", "only http and https can be fetched"],
    ["https://x.example/v1/a%2fb", "an encoded slash or backslash in the path is never allowed"],
    ["https://x.example/v1/a%2Fb", "an encoded slash or backslash in the path is never allowed"],
    ["https://x.example/v1/a%5cb", "an encoded slash or backslash in the path is never allowed"],
    ["https://x.example/v1/a%5Cb", "an encoded slash or backslash in the path is never allowed"],
  ])("refuses %s: %s", (raw, why) => {
    const error = thrownHookboxError(() => parseRequestUrl(raw));
    expect(error.code).toBe("CAPABILITY_DENIED");
    expect(error.message).toMatch(new RegExp(`^ctx\\.fetch: .* is denied: ${why}$`));
  });

  it("keeps the query (an encoded slash there is only data) and drops the fragment", () => {
    expect(parseRequestUrl("https://x.example/v1/a?next=%2F..%2F#frag").href).toBe("https://x.example/v1/a?next=%2F..%2F");
    expect(parseRequestUrl("HTTP://X.example:80/v1/../v2/%2e%2e/v3").href).toBe("http://x.example/v3");
  });
});

describe("denied", () => {
  it("names the URL (at most 2000 characters) in the message and the details", () => {
    expect(denied(new URL("https://x.example/a"), "why")).toMatchObject({
      code: "CAPABILITY_DENIED",
      message: "ctx.fetch: https://x.example/a is denied: why",
      details: { url: "https://x.example/a" },
    });
    const long = `https://x.example/${"a".repeat(3000)}`;
    const error = denied(long, "why");
    expect(error.message).toBe(`ctx.fetch: ${long.slice(0, 2000)} is denied: why`);
    expect(error.details).toEqual({ url: long.slice(0, 2000) });
  });
});

describe("matchEgress", () => {
  const rules = parseEgress(
    ["https://api.example.com/v1/", "https://api.example.com/", "http://api.example.com:8080/v2", "https://other.example/"],
    "egress",
  );
  const match = (url: string) => matchEgress(rules, new URL(url))?.source;

  it("gives the first entry the URL is under", () => {
    expect(match("https://api.example.com/v1/x")).toBe("https://api.example.com/v1/");
    expect(match("https://api.example.com/v1")).toBe("https://api.example.com/v1/");
    expect(match("https://api.example.com/v10")).toBe("https://api.example.com/");
    expect(match("https://api.example.com:443/anything")).toBe("https://api.example.com/");
    expect(match("http://api.example.com:8080/v2/x")).toBe("http://api.example.com:8080/v2");
    expect(match("https://other.example/")).toBe("https://other.example/");
  });

  it("needs the scheme, host and port to be equal and the path to be the entry's or continue it after a /", () => {
    expect(match("http://api.example.com/v1/x")).toBeUndefined();
    expect(match("https://api.example.com:8443/v1/x")).toBeUndefined();
    expect(match("http://api.example.com:8080/v2x")).toBeUndefined();
    expect(match("http://api.example.com:8080/")).toBeUndefined();
    expect(match("https://api.example.com.evil.test/v1/")).toBeUndefined();
    expect(match("http://api.example.com/v2/x")).toBeUndefined();
    expect(match("https://other.example:80/")).toBeUndefined();
  });
});

describe("the address classifier at the edges of its IPv6 rules", () => {
  // Public addresses that share some bytes with a special block (2001::/23, 2001:db8::/32, 3fff::/20, 6to4's
  // 2002::/16 with a private IPv4 inside): a rule that checks only some of the block's bytes refuses them.
  it.each([
    "2a02:100::1",
    "3001:100::1",
    "2a00:10b8::1",
    "2a00:db8::1",
    "3001:db8::1",
    "2003:db8::1",
    "2aff:1::1",
    "3fef:1::1",
    "2003:a00:1::1",
    "2a02:a00:1::1",
    "2a00:a00:1::1",
    "2002:800:808::1",
    "2002:100:1::1",
    "64:ff9b::8.0.8.8",
    "64:ff9b::1.0.0.1",
  ])("%s is public", (text) => {
    expect(classifyAddress(parseAddress(text)!)).toBe("public");
  });

  it("an IPv6 form carrying an IPv4 address of an allowed network is allowed; of another network, not", () => {
    const allowance = [parseCidr("10.1.0.0/16")!];
    for (const text of ["10.1.2.3", "::ffff:10.1.2.3", "64:ff9b::10.1.2.3", "2002:a01:203::1", "::10.1.2.3"])
      expect(addressAllowed(parseAddress(text)!, allowance), text).toBe(true);
    for (const text of ["10.2.0.1", "::ffff:10.2.0.1", "64:ff9b::10.2.0.1", "2002:a02:1::1", "::10.2.0.1", "::1"])
      expect(addressAllowed(parseAddress(text)!, allowance), text).toBe(false);
  });
});

describe("the address parser", () => {
  it("drops an IPv6 zone after a dotted quad too", () => {
    expect(parseAddress("::ffff:1.2.3.4%eth0")).toEqual(parseAddress("1.2.3.4"));
    expect(parseAddress("1::1]")).toBeUndefined();
    expect(parseCidr("1::]/0")).toBeUndefined();
  });

  it("takes a bracketed address and an IPv6 zone, nothing half-bracketed and no zone on IPv4", () => {
    expect(parseAddress("[::1]")).toEqual(parseAddress("::1"));
    expect(parseAddress("fe80::1%eth0")).toEqual(parseAddress("fe80::1"));
    expect(parseAddress("[fe80::1%25eth0]")).toEqual(parseAddress("fe80::1"));
    expect(parseAddress("[::1")).toBeUndefined();
    expect(parseAddress("::1]")).toBeUndefined();
    expect(parseAddress("10.0.0.1%eth0")).toBeUndefined();
    expect(parseAddress("api.example.com")).toBeUndefined();
    expect(Array.from(parseAddress("10.1.2.3")!)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 1, 2, 3]);
    expect(Array.from(parseAddress("::ffff:1.2.3.4")!)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 1, 2, 3, 4]);
    expect(Array.from(parseAddress("1:2::3:4.5.6.7")!)).toEqual([0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 4, 5, 6, 7]);
    expect(Array.from(parseAddress("1:2:3:4:5:6:7.8.9.10")!)).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 7, 8, 9, 10]);
    expect(Array.from(parseAddress("::7.8.9.10")!)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 8, 9, 10]);
  });

  it.each([
    ["10.0.0.0/8", 104],
    ["0.0.0.0/0", 96],
    ["10.1.2.3/32", 128],
    ["fd00::/8", 8],
    ["::/0", 0],
    ["::1/128", 128],
    ["::ffff:10.0.0.0/104", 104],
  ])("parses the network %s (%i bits of 128)", (text, bits) => {
    const cidr = parseCidr(text);
    expect(cidr?.bits).toBe(bits);
    expect(cidr?.base).toEqual(parseAddress(text.slice(0, text.indexOf("/"))));
  });

  it.each([
    "10.0.0.0",
    "10.0.0.0/",
    "10.0.0.0/x",
    "10.0.0.0/8x",
    "10.0.0.0/-8",
    "10.0.0.0/0008",
    "10.0.0.0/33",
    "::/129",
    "[::1]/128",
    "[::]/0",
    "api.example.com/8",
    "/8",
    "10.0.0.1/8",
    "10.0.0.0/8/8",
  ])("refuses %j", (text) => {
    expect(parseCidr(text)).toBeUndefined();
  });
});

describe("checkedAddresses", () => {
  const signal = new AbortController().signal;
  const table =
    (addresses: string[]): ResolveHost =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

  it("a literal IPv4 address is its own answer (family 4), the resolver never asked", async () => {
    const rule = one({ url: "http://10.1.2.3/", allowPrivate: ["10.1.0.0/16"] });
    const never: ResolveHost = () => Promise.reject(new Error("asked"));
    expect(await checkedAddresses(new URL("http://10.1.2.3/x"), rule, never, signal)).toEqual([{ address: "10.1.2.3", family: 4 }]);
  });

  it("the entry's networks allow the addresses inside them, and only those, whatever the name resolves to", async () => {
    const rule = one({ url: "http://partner.internal/", allowPrivate: ["10.1.0.0/16", "fd00::/8"] });
    const url = new URL("http://partner.internal/x");
    for (const addresses of [["10.1.2.3"], ["fd12::1", "10.1.0.1"], ["::ffff:10.1.9.9"], ["8.8.8.8"]])
      expect(await checkedAddresses(url, rule, table(addresses), signal), addresses.join()).toHaveLength(addresses.length);
    for (const addresses of [["10.2.0.1"], ["10.1.2.3", "127.0.0.1"], ["fe80::1"], ["not-an-address"]]) {
      const error = (await rejection(checkedAddresses(url, rule, table(addresses), signal))) as { code: string; message: string };
      expect(error).toMatchObject({
        code: "CAPABILITY_DENIED",
        message:
          'ctx.fetch: http://partner.internal/x is denied: its host resolves to an address the egress entry http://partner.internal/ does not allow (loopback, private, link-local and other non-public addresses need "allowPrivate" on the entry)',
      });
    }
    const everything = one({ url: "http://partner.internal/", allowPrivate: true });
    expect(await checkedAddresses(url, everything, table(["127.0.0.1", "169.254.169.254"]), signal)).toHaveLength(2);
  });

  it("a run that ends while the name resolves rejects with the run's reason, not a resolver failure", async () => {
    const run = new AbortController();
    const pending: ResolveHost = () => new Promise(() => {});
    const waiting = rejection(checkedAddresses(new URL("http://partner.internal/x"), one("http://partner.internal/"), pending, run.signal));
    const reason = new Error("the run ended");
    run.abort(reason);
    expect(await waiting).toBe(reason);
  });

  it("a long URL is cut at 2000 characters in a resolver failure", async () => {
    const url = new URL(`http://partner.internal/${"a".repeat(3000)}`);
    const cut = url.href.slice(0, 2000);
    const failing: ResolveHost = () => Promise.reject(Object.assign(new Error("x"), { code: "ENOTFOUND" }));
    expect(((await rejection(checkedAddresses(url, one("http://partner.internal/"), failing, signal))) as Error).message).toBe(
      `ctx.fetch: ${cut} failed: its host did not resolve (ENOTFOUND)`,
    );
    expect(((await rejection(checkedAddresses(url, one("http://partner.internal/"), table([]), signal))) as Error).message).toBe(
      `ctx.fetch: ${cut} failed: its host resolved to no address`,
    );
  });

  it("the system resolver answers each address with its family", async () => {
    expect(await systemResolver("127.0.0.1")).toEqual([{ address: "127.0.0.1", family: 4 }]);
    expect(await systemResolver("::1")).toEqual([{ address: "::1", family: 6 }]);
  });

  it("a resolver's code that is not a string is not quoted", async () => {
    const odd: ResolveHost = () => Promise.reject(Object.assign(new Error("x"), { code: 42 }));
    const error = (await rejection(
      checkedAddresses(new URL("http://partner.internal/x"), one("http://partner.internal/"), odd, signal),
    )) as {
      message: string;
    };
    expect(error.message).toBe("ctx.fetch: http://partner.internal/x failed: its host did not resolve (no address)");
  });
});
