import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ResolveHost, ResolvedAddress } from "../../src/capabilities/egress-connect.js";
import type { CapabilityGrants } from "../../src/capabilities/grants.js";
import { createSandboxPool, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { hookRuntime } from "./hook-runtime.js";

/*
 * SSRF through DNS: an egress entry names a host, and the name leads to the host's own loopback (an attacker's
 * DNS, a rebinding, a careless record). A "metadata service" listens on 127.0.0.1 and a "partner" on 127.0.0.2,
 * on the same port, so only the address a connection goes to tells them apart. Scripts fetch through the real
 * broker, the real sandbox and undici; the resolver is the test's (the runtime's `resolveHost`), playing the
 * attacker's DNS, except in the test of `localhost`, which goes through the system's resolver.
 */

const prober = `import { defineScript } from "hookbox";
export default defineScript({
  name: "prober",
  onHookError: "fail-open",
  hooks: {
    async beforeToolCall(p) {
      // One log line per URL (a line is capped at 4096 characters).
      for (const url of JSON.parse(p.call.args.urls as string) as string[]) {
        try {
          const r = await p.fetch(url);
          console.log(JSON.stringify({ url, status: r.status, body: r.body }));
        } catch (e) {
          console.log(JSON.stringify({ url, code: (e as any).code, message: (e as Error).message }));
        }
      }
      return undefined;
    },
  },
});
`;

interface Recorder {
  server: Server;
  paths: string[];
}

/** An HTTP server on `address:port` that records each path; `/bounce?to=URL` redirects there. */
async function listen(address: string, port: number, answer: string): Promise<Recorder> {
  const paths: string[] = [];
  const server = createServer((request, response) => {
    paths.push(request.url ?? "/");
    const target = new URL(request.url ?? "/", "http://x").searchParams.get("to");
    if (target) response.writeHead(302, { location: target }).end();
    else response.writeHead(200, { "content-type": "text/plain" }).end(answer);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, address, () => resolve());
  });
  return { server, paths };
}

let pool: SupervisedSandboxPool;
let metadata: Recorder;
let partner: Recorder;
let port: number;

beforeAll(async () => {
  pool = createSandboxPool({ workers: 1 });
  // The same port on both addresses: a connection that follows a second answer of the DNS lands on the other one.
  for (let attempt = 0; ; attempt++) {
    partner = await listen("127.0.0.2", 0, "partner");
    port = (partner.server.address() as AddressInfo).port;
    try {
      metadata = await listen("127.0.0.1", port, '{"AccessKeyId":"AKIA-LEAKED","SecretAccessKey":"wJalr-LEAKED"}');
      break;
    } catch (error) {
      partner.server.close();
      if (attempt === 5) throw error;
    }
  }
});

afterAll(async () => {
  await pool?.close();
  metadata?.server.close();
  partner?.server.close();
});

/** A resolver from a table; a name with several lists answers them in turn (the last one from then on). */
function resolver(table: Record<string, string[][]>): ResolveHost & { calls: string[] } {
  const calls: string[] = [];
  const asked = new Map<string, number>();
  const resolve = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const answers = table[hostname];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    const index = Math.min(asked.get(hostname) ?? 0, answers.length - 1);
    asked.set(hostname, index + 1);
    return answers[index].map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

async function probe(tenant: string, urls: string[], egress: CapabilityGrants["egress"], resolveHost?: ResolveHost) {
  const runtime = await hookRuntime({
    pool,
    tenant,
    script: prober,
    args: { urls: JSON.stringify(urls) },
    capabilities: { egress },
    ...(resolveHost ? { extras: { resolveHost } } : {}),
  });
  const handle = runtime.start({ sessionId: `sess_${tenant}`, prompt: "go" });
  const events: HookboxEvent[] = [];
  for await (const event of handle.events()) events.push(event);
  expect((await handle.wait()).status).toBe("completed");
  return events.flatMap((event) => (event.type === "log" ? [JSON.parse(event.message)] : [])) as {
    url: string;
    status?: number;
    body?: string;
    code?: string;
    message?: string;
  }[];
}

const NON_PUBLIC: Record<string, string[]> = {
  "loopback.test": ["127.0.0.1"],
  "loopback-range.test": ["127.9.9.9"],
  "mapped.test": ["::ffff:127.0.0.1"],
  "compatible.test": ["::127.0.0.1"],
  "v6-loopback.test": ["::1"],
  "unspecified.test": ["0.0.0.0"],
  "metadata.test": ["169.254.169.254"],
  "nat64-metadata.test": ["64:ff9b::a9fe:a9fe"],
  "sixtofour.test": ["2002:7f00:1::1"],
  "private.test": ["10.0.0.7"],
  "cgnat.test": ["100.64.0.1"],
  "unique-local.test": ["fd12:3456::1"],
  "link-local-v6.test": ["fe80::1"],
  "multicast.test": ["224.0.0.1"],
  "broadcast.test": ["255.255.255.255"],
  "public-and-loopback.test": ["93.184.215.14", "127.0.0.1"],
};

describe("egress: where an allowed name may lead", () => {
  it("refuses a name resolving to a non-public address in any form, naming the entry and never the addresses", async () => {
    metadata.paths.length = 0;
    const dns = resolver(Object.fromEntries(Object.entries(NON_PUBLIC).map(([name, addresses]) => [name, [addresses]])));
    const names = Object.keys(NON_PUBLIC);
    const results = await probe(
      "no-allowance",
      names.map((name) => `http://${name}:${port}/v1/creds`),
      names.map((name) => `http://${name}:${port}/v1/`),
      dns,
    );
    expect(results).toHaveLength(names.length);
    for (const [index, result] of results.entries()) {
      const name = names[index];
      expect(result, name).toMatchObject({ code: "CAPABILITY_DENIED" });
      expect(result.message).toContain(`the egress entry http://${name}:${port}/v1/ does not allow`);
      for (const address of NON_PUBLIC[name]) expect(result.message).not.toContain(address);
    }
    expect(dns.calls).toEqual(names);
    expect(metadata.paths).toEqual([]);
  });

  it("allowPrivate: true lets an entry reach its host on the operator's network", async () => {
    metadata.paths.length = 0;
    const dns = resolver({ "inventory.internal": [["127.0.0.1"]] });
    const [result] = await probe(
      "allow-all",
      [`http://inventory.internal:${port}/v1/stock`],
      [{ url: `http://inventory.internal:${port}/v1/`, allowPrivate: true }],
      dns,
    );
    expect(result).toMatchObject({ status: 200, body: expect.stringContaining("AKIA-LEAKED") });
    expect(metadata.paths).toEqual(["/v1/stock"]);
  });

  it("a list of networks allows those and nothing else", async () => {
    metadata.paths.length = 0;
    partner.paths.length = 0;
    const dns = resolver({ "partner.internal": [["127.0.0.2"]], "other.internal": [["127.0.0.1"]] });
    const results = await probe(
      "allow-cidr",
      [`http://partner.internal:${port}/v1/a`, `http://other.internal:${port}/v1/b`],
      [
        { url: `http://partner.internal:${port}/v1/`, allowPrivate: ["127.0.0.2/32"] },
        { url: `http://other.internal:${port}/v1/`, allowPrivate: ["127.0.0.2/32", "fd00::/8"] },
      ],
      dns,
    );
    expect(results[0]).toMatchObject({ status: 200, body: "partner" });
    expect(results[1]).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(partner.paths).toEqual(["/v1/a"]);
    expect(metadata.paths).toEqual([]);
  });

  it("a rebinding DNS cannot move a connection: the host connects to the address it checked, and checks each redirect anew", async () => {
    metadata.paths.length = 0;
    partner.paths.length = 0;
    const entry = { url: `http://rebind.test:${port}/v1/`, allowPrivate: ["127.0.0.2/32"] };
    // First the allowed partner, then the metadata service for every later question.
    const dns = resolver({ "rebind.test": [["127.0.0.2"], ["127.0.0.1"]] });
    const bounce = `http://rebind.test:${port}/v1/bounce?to=${encodeURIComponent(`http://rebind.test:${port}/v1/creds`)}`;
    const results = await probe("rebinding", [`http://rebind.test:${port}/v1/ok`, bounce], [entry], dns);
    // The connection went where the one checked answer said; the client never asked the DNS again.
    expect(results[0]).toMatchObject({ status: 200, body: "partner" });
    // The second request's first hop is resolved and checked again, and refused.
    expect(results[1]).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(dns.calls).toEqual(["rebind.test", "rebind.test"]);
    expect(metadata.paths).toEqual([]);
    expect(partner.paths).toEqual(["/v1/ok"]);

    // A redirect to another allowed name is resolved and checked at its hop.
    const hops = resolver({ "start.test": [["127.0.0.2"]], "hop.test": [["127.0.0.1"]] });
    const [redirected] = await probe(
      "rebinding-hop",
      [`http://start.test:${port}/v1/bounce?to=${encodeURIComponent(`http://hop.test:${port}/v1/creds`)}`],
      [
        { url: `http://start.test:${port}/v1/`, allowPrivate: ["127.0.0.2/32"] },
        { url: `http://hop.test:${port}/v1/`, allowPrivate: ["127.0.0.2/32"] },
      ],
      hops,
    );
    expect(redirected).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(redirected.message).toContain(`the egress entry http://hop.test:${port}/v1/ does not allow`);
    expect(hops.calls).toEqual(["start.test", "hop.test"]);
    expect(metadata.paths).toEqual([]);
  });

  it("the system's resolver is checked too: localhost is refused unless the entry allows it", async () => {
    metadata.paths.length = 0;
    const [refused] = await probe("localhost-refused", [`http://localhost:${port}/v1/creds`], [`http://localhost:${port}/v1/`]);
    expect(refused).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(metadata.paths).toEqual([]);
    const [allowed] = await probe(
      "localhost-allowed",
      [`http://localhost:${port}/v1/creds`],
      [{ url: `http://localhost:${port}/v1/`, allowPrivate: ["127.0.0.0/8", "::1/128"] }],
    );
    expect(allowed).toMatchObject({ status: 200 });
  });

  it("an entry naming a non-public address literally is refused at load unless it allows it", async () => {
    for (const url of [
      `http://127.0.0.1:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://2130706433:${port}/`,
      `http://0x7f.1:${port}/`,
      `http://0.0.0.0:${port}/`,
      `http://[::1]:${port}/`,
      "http://169.254.169.254/latest/",
      "http://[64:ff9b::a9fe:a9fe]/",
    ]) {
      await expect(probe("literal", [url], [url]), url).rejects.toThrow(/egress\[0\]: .* names a non-public address; add "allowPrivate"/);
    }
    metadata.paths.length = 0;
    const [result] = await probe(
      "literal-allowed",
      [`http://2130706433:${port}/v1/x`],
      [{ url: `http://127.0.0.1:${port}/`, allowPrivate: ["127.0.0.1/32"] }],
    );
    // Both spellings are one canonical URL; the request reached the address the entry allows.
    expect(result).toMatchObject({ status: 200 });
    expect(metadata.paths).toEqual(["/v1/x"]);
  });
});
