import { describe, expect, it } from "vitest";
import { checkedAddresses, type ResolveHost } from "../../src/capabilities/egress-connect.js";
import { parseEgress } from "../../src/capabilities/egress.js";
import { isHookboxError } from "../../src/errors.js";

/*
 * Where a request may connect, decided before any connection (src/capabilities/egress-connect.ts), in the
 * host's own process: what the resolver answers, or fails to, and literal addresses in URLs. The same rules
 * through a script, the sandbox and undici: test/capabilities/egress-addresses.test.ts.
 */

const [rule] = parseEgress(["http://api.partner.test/v1/"], "egress");
const [literalRule] = parseEgress([{ url: "http://[2001:4860::8888]/v1/" }], "egress");
const signal = new AbortController().signal;

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(isHookboxError(error), String(error)).toBe(true);
  return error as { code: string; message: string };
}

describe("checkedAddresses", () => {
  it("a name that does not resolve fails naming the resolver's code, never with an address", async () => {
    const refused: ResolveHost = () => Promise.reject(Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" }));
    const error = await failure(checkedAddresses(new URL("http://api.partner.test/v1/x"), rule!, refused, signal));
    expect(error).toMatchObject({
      code: "CAPABILITY_FAILED",
      message: "ctx.fetch: http://api.partner.test/v1/x failed: its host did not resolve (ENOTFOUND)",
    });
    const codeless: ResolveHost = () => Promise.reject(new Error("nothing"));
    expect((await failure(checkedAddresses(new URL("http://api.partner.test/v1/x"), rule!, codeless, signal))).message).toContain(
      "did not resolve (no address)",
    );
  });

  it("a name that resolves to nothing fails; one address not allowed among allowed ones refuses the request", async () => {
    const none: ResolveHost = async () => [];
    expect(await failure(checkedAddresses(new URL("http://api.partner.test/v1/x"), rule!, none, signal))).toMatchObject({
      code: "CAPABILITY_FAILED",
      message: "ctx.fetch: http://api.partner.test/v1/x failed: its host resolved to no address",
    });
    const mixed: ResolveHost = async () => [
      { address: "8.8.8.8", family: 4 },
      { address: "::ffff:127.0.0.1", family: 6 },
    ];
    const refused = await failure(checkedAddresses(new URL("http://api.partner.test/v1/x"), rule!, mixed, signal));
    expect(refused.code).toBe("CAPABILITY_DENIED");
    expect(refused.message).not.toContain("127.0.0.1");
    const publicOnly: ResolveHost = async () => [{ address: "8.8.8.8", family: 4 }];
    expect(await checkedAddresses(new URL("http://api.partner.test/v1/x"), rule!, publicOnly, signal)).toEqual([
      { address: "8.8.8.8", family: 4 },
    ]);
  });

  it("a literal address in the URL is checked as it is (IPv6 without its brackets), the resolver never asked", async () => {
    const asked: string[] = [];
    const resolver: ResolveHost = async (host) => {
      asked.push(host);
      return [];
    };
    expect(await checkedAddresses(new URL("http://[2001:4860::8888]/v1/x"), literalRule!, resolver, signal)).toEqual([
      { address: "2001:4860::8888", family: 6 },
    ]);
    expect(asked).toEqual([]);
  });
});
