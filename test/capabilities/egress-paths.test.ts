import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { CapabilityGrants } from "../../src/capabilities/grants.js";
import { createSandboxPool, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import { hookRuntime, runLoggedLines } from "./hook-runtime.js";

/*
 * The egress list's path rules end to end: a sandboxed script's ctx.fetch through the real broker and undici to a
 * real HTTP server on loopback that records every path it is asked for. What the server never receives is what
 * the rule kept out: a sibling path (`/apix` beside `/api`), an encoded slash or backslash, a redirect past the
 * limit. (Property tests over the matcher alone: egress.property.test.ts.)
 */

const fetcher = `import { defineScript } from "hookbox";
export default defineScript({ name: "fetcher", hooks: { async beforeToolCall(p) {
  for (const url of JSON.parse(p.call.args.urls as string) as string[]) {
    const line = await p.fetch(url).then((r) => ({ url, status: r.status, body: r.body }), (e) => ({ url, code: e.code, message: e.message }));
    console.log(JSON.stringify(line));
  }
} } });
`;

let pool: SupervisedSandboxPool;
let server: Server;
let origin: string;
const received: string[] = [];

beforeAll(async () => {
  pool = createSandboxPool({ workers: 1 });
  // `/api/hop/N` redirects to `/api/hop/N-1`; `/api/hop/0` and every other path answers with its own path.
  server = createServer((request, response) => {
    const path = request.url ?? "/";
    received.push(path);
    const hop = /^\/api\/hop\/(\d+)$/.exec(path);
    if (hop && Number(hop[1]) > 0) response.writeHead(302, { location: `/api/hop/${Number(hop[1]) - 1}` }).end();
    else response.writeHead(200, { "content-type": "text/plain" }).end(`at ${path}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await pool?.close();
  server?.close();
});

async function fetchAll(urls: string[], limits: CapabilityGrants["limits"] = {}) {
  received.length = 0;
  const runtime = await hookRuntime({
    pool,
    tenant: `egress-${Math.random().toString(36).slice(2)}`,
    script: fetcher,
    args: { urls: JSON.stringify(urls) },
    // The test's server is on loopback: the entry allows it explicitly, as an operator's own network would.
    capabilities: { egress: [{ url: `${origin}/api`, allowPrivate: true }], limits: { maxFetchesPerRun: 50, ...limits } },
  });
  const lines = (await runLoggedLines(runtime, "sess_egress")) as {
    url: string;
    status?: number;
    body?: string;
    code?: string;
    message?: string;
  }[];
  return { byPath: Object.fromEntries(lines.map((line) => [line.url.slice(origin.length), line])), received: [...received] };
}

describe("ctx.fetch under an egress entry with a path", () => {
  it("reaches the entry's path and what continues it after a /; never a sibling that only shares its prefix", async () => {
    const { byPath, received } = await fetchAll(
      ["/api", "/api/", "/api/x", "/apix", "/api-admin", "/api.json", "/ap", "/"].map((p) => origin + p),
    );
    for (const path of ["/api", "/api/", "/api/x"]) expect(byPath[path], path).toMatchObject({ status: 200, body: `at ${path}` });
    for (const path of ["/apix", "/api-admin", "/api.json", "/ap", "/"]) {
      expect(byPath[path], path).toMatchObject({ code: "CAPABILITY_DENIED" });
      expect(byPath[path]!.message).toContain("is not under any entry of the tenant's egress list");
    }
    expect(received).toEqual(["/api", "/api/", "/api/x"]);
  }, 30_000);

  it("refuses an encoded slash or backslash anywhere in the path, and a dot segment that climbs out, before any request", async () => {
    const paths = ["/api%2F..%2Fadmin", "/api/a%2fb", "/api/a%5Cb", "/api/a%5c..%5cadmin", "/api/%2e%2e/admin", "/api/../admin"];
    const { byPath, received } = await fetchAll(paths.map((p) => origin + p));
    for (const path of paths.slice(0, 4)) {
      expect(byPath[path], path).toMatchObject({ code: "CAPABILITY_DENIED" });
      expect(byPath[path]!.message).toContain("an encoded slash or backslash in the path is never allowed");
    }
    // Dot segments are resolved before the match (to /admin), which is not under /api.
    for (const line of Object.values(byPath).slice(4)) expect(line).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(received).toEqual([]);
  }, 30_000);

  it("follows at most maxRedirects redirects (5): five land, the sixth is refused without being requested", async () => {
    const { byPath, received } = await fetchAll([`${origin}/api/hop/5`, `${origin}/api/hop/6`]);
    expect(byPath["/api/hop/5"]).toMatchObject({ status: 200, body: "at /api/hop/0" });
    expect(byPath["/api/hop/6"]).toMatchObject({ code: "CAPABILITY_QUOTA" });
    expect(byPath["/api/hop/6"]!.message).toContain("more than 5 redirects");
    expect(received).toEqual([5, 4, 3, 2, 1, 0, 6, 5, 4, 3, 2, 1].map((n) => `/api/hop/${n}`));
  }, 30_000);

  it("a tenant's own maxRedirects holds the same way (1: one lands, two are refused; 0: none is followed)", async () => {
    const one = await fetchAll([`${origin}/api/hop/1`, `${origin}/api/hop/2`], { maxRedirects: 1 });
    expect(one.byPath["/api/hop/1"]).toMatchObject({ status: 200 });
    expect(one.byPath["/api/hop/2"]).toMatchObject({ code: "CAPABILITY_QUOTA" });
    const none = await fetchAll([`${origin}/api/hop/1`], { maxRedirects: 0 });
    expect(none.byPath["/api/hop/1"]).toMatchObject({ code: "CAPABILITY_QUOTA" });
    expect(none.received).toEqual(["/api/hop/1"]);
  }, 30_000);
});
