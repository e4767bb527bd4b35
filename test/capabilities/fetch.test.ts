import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { getDefaultAutoSelectFamily, setDefaultAutoSelectFamily, type AddressInfo } from "node:net";
import { Response } from "undici";
import { brokeredFetch, type FetchDeps, type FetchRequest, type FetchTransport } from "../../src/capabilities/fetch.js";
import { parseEgress } from "../../src/capabilities/egress.js";
import { DEFAULT_CAPABILITY_LIMITS, type CapabilityLimits, type EgressEntry } from "../../src/capabilities/grants.js";
import type { ResolveHost } from "../../src/capabilities/egress-connect.js";
import { isHookboxError } from "../../src/errors.js";

/*
 * ctx.fetch on the host (src/capabilities/fetch.ts), called directly in the test's own process with an egress
 * list and a real HTTP server on loopback that records what it is sent: the secret headers as sent and redacted
 * from what comes back, the script's headers the host keeps for itself, redirects (each hop checked, the method
 * and body a 303 or a POST's 301/302 drops), the body limits both ways, and the failures' codes and messages.
 * The same rules through a sandboxed script: egress-paths, egress-secrets and egress-addresses.test.ts.
 */

const SECRET = "sk-live-7f3a9c2e51d04b8a";

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

let server: Server;
let port: number;
const seen: Seen[] = [];

beforeAll(async () => {
  // /api/echo answers with what it was sent (headers and body) and echoes the authorization header in its own;
  // /api/status/N?to=PATH answers N with `location: PATH`; /api/bytes/N answers N bytes of "x";
  // /api/split answers "é" split across two writes; /api/slow never answers; the rest answers its own path.
  server = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    request.on("end", () => {
      const url = new URL(request.url ?? "/", "http://x");
      seen.push({ method: request.method ?? "", path: request.url ?? "", headers: request.headers, body });
      const status = /^\/api\/status\/(\d+)$/.exec(url.pathname);
      const bytes = /^\/api\/bytes\/(\d+)$/.exec(url.pathname);
      if (url.pathname === "/api/echo" || url.pathname === "/open/echo")
        response
          .writeHead(200, { "content-type": "application/json", "x-echo-auth": String(request.headers.authorization) })
          .end(JSON.stringify({ method: request.method, headers: request.headers, body }));
      else if (status) {
        const to = url.searchParams.get("to");
        response.writeHead(Number(status[1]), to === null ? {} : { location: to }).end("moved");
      } else if (bytes) response.writeHead(200).end("x".repeat(Number(bytes[1])));
      else if (url.pathname === "/api/split") {
        const e = Buffer.from("é");
        response.writeHead(200, { "content-type": "text/plain" });
        response.write(e.subarray(0, 1));
        setTimeout(() => response.end(e.subarray(1)), 50);
      } else if (url.pathname === "/api/slow") response.writeHead(200).write("started");
      else response.writeHead(200).end(`at ${url.pathname}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => {
  server?.closeAllConnections();
  server?.close();
});

/** `partner.test` and `open.test` lead to the test's server; anything else does not resolve. */
const resolve: ResolveHost = async (hostname) => {
  if (hostname === "partner.test" || hostname === "open.test") return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
};

const base = () => `http://partner.test:${port}`;

function entries(): EgressEntry[] {
  return [
    { url: `${base()}/api/`, allowPrivate: true, headers: { authorization: { env: "PARTNER_KEY", prefix: "Bearer " } } },
    { url: `http://open.test:${port}/open/`, allowPrivate: ["127.0.0.0/8"] },
  ];
}

type Overrides = Partial<Omit<FetchDeps, "limits">> & { limits?: Partial<CapabilityLimits> };

function deps({ limits, ...overrides }: Overrides = {}): FetchDeps {
  return {
    rules: parseEgress(entries(), "egress"),
    env: { PARTNER_KEY: `${SECRET}\r\n` },
    signal: new AbortController().signal,
    resolve,
    ...overrides,
    limits: { ...DEFAULT_CAPABILITY_LIMITS, ...limits },
  };
}

async function send(request: FetchRequest, overrides?: Overrides) {
  seen.length = 0;
  const urls: string[] = [];
  const answer = await brokeredFetch(request, deps(overrides), (url) => urls.push(url));
  return { answer, urls, seen: [...seen] };
}

async function refusal(request: FetchRequest, overrides?: Overrides) {
  seen.length = 0;
  const urls: string[] = [];
  const error = await brokeredFetch(request, deps(overrides), (url) => urls.push(url)).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(isHookboxError(error), String(error)).toBe(true);
  return { error: error as { code: string; message: string; details: Record<string, unknown> }, urls, seen: [...seen] };
}

describe("brokeredFetch: what is sent", () => {
  it("sends the entry's header as sent (prefix, value without its whitespace) and redacts it from the body and headers", async () => {
    const { answer, seen } = await send({ url: `${base()}/api/echo` });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(answer.status).toBe(200);
    expect(answer.headers["x-echo-auth"]).toBe("Bearer [redacted]");
    expect(answer.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(answer.body).headers.authorization).toBe("Bearer [redacted]");
    expect(JSON.stringify(answer)).not.toContain(SECRET);
  });

  it("drops the script's own headers of the entry's names (any case) and the transport's, keeps the rest", async () => {
    const { seen } = await send({
      url: `${base()}/api/echo`,
      headers: {
        Authorization: "Bearer the-script's",
        "x-trace": "t1",
        Host: "evil.test",
        Connection: "close",
        "Content-Length": "5",
        "transfer-encoding": "chunked",
        "keep-alive": "timeout=1",
        upgrade: "websocket",
        te: "trailers",
        trailer: "x",
      },
    });
    const headers = seen[0]!.headers;
    expect(headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(headers["x-trace"]).toBe("t1");
    expect(headers.host).toBe(`partner.test:${port}`);
    expect(headers.connection).not.toBe("close");
    for (const name of ["transfer-encoding", "keep-alive", "upgrade", "te", "trailer"]) expect(headers[name], name).toBeUndefined();
  });

  it("a script's header that Headers refuses is CAPABILITY_INVALID naming it; nothing is sent", async () => {
    const { error, seen } = await refusal({ url: `${base()}/api/echo`, headers: { "bad name": "x" } });
    expect(error).toMatchObject({ code: "CAPABILITY_INVALID", message: 'ctx.fetch: header "bad name" is not a valid header' });
    expect(seen).toEqual([]);
    const long = await refusal({ url: `${base()}/api/echo`, headers: { [`${"a".repeat(150)} `]: "x" } });
    expect(long.error.message).toBe(`ctx.fetch: header "${"a".repeat(100)}" is not a valid header`);
  });

  it("a script's Content-Length that lies about its body is dropped: the body arrives whole, as one request", async () => {
    const { answer, seen } = await send({ url: `${base()}/api/echo`, method: "POST", body: "abcdef", headers: { "Content-Length": "1" } });
    expect(seen.map((request) => [request.method, request.path, request.body])).toEqual([["POST", "/api/echo", "abcdef"]]);
    expect(JSON.parse(answer.body)).toMatchObject({ body: "abcdef", headers: { "content-length": "6" } });
  });

  it("an answer without a body (a HEAD's) is the empty string", async () => {
    expect((await send({ url: `${base()}/api/echo`, method: "HEAD" })).answer).toMatchObject({ status: 200, body: "" });
  });

  it("the method defaults to GET and is upper-cased; the body goes with it", async () => {
    const get = await send({ url: `${base()}/api/echo` });
    expect(get.seen[0]).toMatchObject({ method: "GET", body: "" });
    const post = await send({ url: `${base()}/api/echo`, method: "post", body: "ü-body" });
    expect(post.seen[0]).toMatchObject({ method: "POST", body: "ü-body" });
  });

  it("a request body of maxRequestBytes is sent; one byte more (counted in UTF-8 bytes) is CAPABILITY_QUOTA, nothing sent", async () => {
    const limits = { maxRequestBytes: 10 };
    expect((await send({ url: `${base()}/api/echo`, method: "POST", body: "x".repeat(10) }, { limits })).seen).toHaveLength(1);
    for (const body of ["x".repeat(11), "é".repeat(6)]) {
      const { error, seen } = await refusal({ url: `${base()}/api/echo`, method: "POST", body }, { limits });
      expect(error).toMatchObject({ code: "CAPABILITY_QUOTA", message: "ctx.fetch: the request body exceeds 10 bytes" });
      expect(seen).toEqual([]);
    }
  });

  it("an entry's variable that is not set fails the request (CAPABILITY_FAILED by entry and variable); nothing is sent", async () => {
    const { error, seen } = await refusal({ url: `${base()}/api/echo` }, { env: {} });
    expect(error).toMatchObject({
      code: "CAPABILITY_FAILED",
      message: `ctx.fetch: the egress entry ${base()}/api/ adds header "authorization" from environment variable PARTNER_KEY, which is not set on the host`,
    });
    expect(seen).toEqual([]);
  });
});

describe("brokeredFetch: the egress list and redirects", () => {
  it("a URL under no entry is CAPABILITY_DENIED before anything is resolved or sent", async () => {
    const asked: string[] = [];
    const counting: ResolveHost = async (host) => (asked.push(host), resolve(host));
    const { error, urls, seen } = await refusal({ url: `${base()}/apix` }, { resolve: counting });
    expect(error).toMatchObject({
      code: "CAPABILITY_DENIED",
      message: `ctx.fetch: ${base()}/apix is denied: it is not under any entry of the tenant's egress list`,
    });
    expect(urls).toEqual([`${base()}/apix`]);
    expect(asked).toEqual([]);
    expect(seen).toEqual([]);
  });

  it("connects to the address checked for the entry: a name leading to a private address it does not allow is refused", async () => {
    const rebinding: ResolveHost = async (host) => (host === "open.test" ? [{ address: "10.0.0.1", family: 4 }] : resolve(host));
    const { error, seen } = await refusal({ url: `http://open.test:${port}/open/x` }, { resolve: rebinding });
    expect(error.code).toBe("CAPABILITY_DENIED");
    expect(error.message).toContain(`the egress entry http://open.test:${port}/open/ does not allow`);
    expect(error.message).not.toContain("10.0.0.1");
    expect(seen).toEqual([]);
    // The same name allowed: the connection goes to the checked 127.0.0.1, though nothing else resolves open.test.
    expect((await send({ url: `http://open.test:${port}/open/x` })).answer).toMatchObject({ status: 200, body: "at /open/x" });
  });

  it("connects to the checked address with Node's address family autoselection off too (one address asked for)", async () => {
    const before = getDefaultAutoSelectFamily();
    setDefaultAutoSelectFamily(false);
    try {
      expect((await send({ url: `http://open.test:${port}/open/x` })).answer).toMatchObject({ status: 200, body: "at /open/x" });
    } finally {
      setDefaultAutoSelectFamily(before);
    }
  });

  it("follows a redirect inside the list, each hop with its own entry's headers only; onUrl learns each URL", async () => {
    const { answer, urls, seen } = await send({
      url: `${base()}/api/status/302?to=${encodeURIComponent(`http://open.test:${port}/open/echo`)}`,
    });
    expect(answer.status).toBe(200);
    expect(urls).toEqual([
      `${base()}/api/status/302?to=${encodeURIComponent(`http://open.test:${port}/open/echo`)}`,
      `http://open.test:${port}/open/echo`,
    ]);
    expect(seen.map((request) => request.headers.authorization)).toEqual([`Bearer ${SECRET}`, undefined]);
  });

  it("a secret of an earlier hop is redacted from a later hop's answer", async () => {
    const { answer } = await send({
      url: `${base()}/api/status/307?to=${encodeURIComponent(`http://open.test:${port}/open/echo`)}`,
      method: "POST",
      body: `token=${SECRET}`,
    });
    expect(JSON.parse(answer.body)).toMatchObject({ method: "POST", body: "token=[redacted]" });
  });

  it("a redirect out of the list is CAPABILITY_DENIED naming the target, which is never requested", async () => {
    const { error, urls, seen } = await refusal({ url: `${base()}/api/status/301?to=/outside/x` });
    expect(error).toMatchObject({
      code: "CAPABILITY_DENIED",
      message: `ctx.fetch: ${base()}/outside/x is denied: a redirect left the egress list`,
    });
    expect(urls).toEqual([`${base()}/api/status/301?to=/outside/x`, `${base()}/outside/x`]);
    expect(seen.map((request) => request.path)).toEqual(["/api/status/301?to=/outside/x"]);
  });

  it("a redirect target is checked like a requested URL: an encoded slash in it is refused", async () => {
    const { error, seen } = await refusal({ url: `${base()}/api/status/302?to=${encodeURIComponent("/api/a%2F..%2Fb")}` });
    expect(error.code).toBe("CAPABILITY_DENIED");
    expect(error.message).toContain("an encoded slash or backslash in the path is never allowed");
    expect(seen).toHaveLength(1);
  });

  it.each([
    [303, "POST", "GET", ""],
    [303, "PUT", "GET", ""],
    [301, "POST", "GET", ""],
    [302, "POST", "GET", ""],
    [302, "PUT", "PUT", "the-body"],
    [307, "POST", "POST", "the-body"],
    [308, "POST", "POST", "the-body"],
  ])("a %i answering a %s continues as a %s (body %j)", async (status, method, after, body) => {
    const { seen } = await send({ url: `${base()}/api/status/${status}?to=/api/echo`, method, body: "the-body" });
    expect(seen.map((request) => [request.method, request.body])).toEqual([
      [method, "the-body"],
      [after, body],
    ]);
  });

  it("a 303 answering a HEAD stays a HEAD", async () => {
    const { seen } = await send({ url: `${base()}/api/status/303?to=/api/echo`, method: "HEAD" });
    expect(seen.map((request) => request.method)).toEqual(["HEAD", "HEAD"]);
  });

  it("a redirect status without a location, or a location with another status, is the answer", async () => {
    const bare = await send({ url: `${base()}/api/status/302` });
    expect(bare.answer).toMatchObject({ status: 302, body: "moved" });
    expect(bare.seen).toHaveLength(1);
    const created = await send({ url: `${base()}/api/status/201?to=/api/echo` });
    expect(created.answer).toMatchObject({ status: 201, body: "moved", headers: { location: "/api/echo" } });
    expect(created.seen).toHaveLength(1);
  });

  it("follows maxRedirects redirects and refuses the next one (CAPABILITY_QUOTA naming the request) without requesting it", async () => {
    const chain = (hops: number): string => (hops === 0 ? "/api/echo" : `/api/status/302?to=${encodeURIComponent(chain(hops - 1))}`);
    const two = await send({ url: `${base()}${chain(2)}` }, { limits: { maxRedirects: 2 } });
    expect(two.answer.status).toBe(200);
    expect(two.seen).toHaveLength(3);
    const three = await refusal({ url: `${base()}${chain(3)}` }, { limits: { maxRedirects: 2 } });
    expect(three.error).toMatchObject({
      code: "CAPABILITY_QUOTA",
      message: `ctx.fetch: ${base()}${chain(3)}: more than 2 redirects`,
    });
    expect(three.seen).toHaveLength(3);
    const long = `${base()}/api/status/302?to=/api/echo&pad=${"a".repeat(3000)}`;
    const cut = await refusal({ url: long }, { limits: { maxRedirects: 0 } });
    expect(cut.error.message).toBe(`ctx.fetch: ${long.slice(0, 2000)}: more than 0 redirects`);
  });
});

describe("brokeredFetch: the answer", () => {
  it("a body of maxResponseBytes is read whole; one byte more is CAPABILITY_QUOTA with the limit", async () => {
    expect((await send({ url: `${base()}/api/bytes/100` }, { limits: { maxResponseBytes: 100 } })).answer.body).toBe("x".repeat(100));
    const { error } = await refusal({ url: `${base()}/api/bytes/101` }, { limits: { maxResponseBytes: 100 } });
    expect(error).toMatchObject({
      code: "CAPABILITY_QUOTA",
      message: `ctx.fetch: ${base()}/api/bytes/101: the response body exceeds 100 bytes`,
      details: { limitBytes: 100 },
    });
  });

  it("a character split across the body's chunks is decoded whole", async () => {
    expect((await send({ url: `${base()}/api/split` })).answer.body).toBe("é");
  });

  it("a request past fetchTimeoutMs is CAPABILITY_TIMEOUT; one whose run ends is CANCELLED", async () => {
    const slow = await refusal({ url: `${base()}/api/slow` }, { limits: { fetchTimeoutMs: 300 } });
    expect(slow.error).toMatchObject({ code: "CAPABILITY_TIMEOUT", message: `ctx.fetch: ${base()}/api/slow took longer than 300 ms` });
    const run = new AbortController();
    setTimeout(() => run.abort(), 200);
    const ended = await refusal({ url: `${base()}/api/slow` }, { signal: run.signal });
    expect(ended.error).toMatchObject({ code: "CANCELLED", message: `ctx.fetch: ${base()}/api/slow: the run ended` });
  });

  it("a connection that fails is CAPABILITY_FAILED with the cause's code, never the addresses tried", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const { error } = await refusal(
      { url: `http://open.test:${closedPort}/open/x` },
      { rules: parseEgress([{ url: `http://open.test:${closedPort}/open/`, allowPrivate: true }], "egress") },
    );
    expect(error).toMatchObject({
      code: "CAPABILITY_FAILED",
      message: `ctx.fetch: http://open.test:${closedPort}/open/x failed: ECONNREFUSED`,
    });
  });

  it("a failure without a code says the connection failed", async () => {
    const failing: FetchTransport = () => Promise.reject(new Error("at 10.9.8.7"));
    const { error } = await refusal({ url: `${base()}/api/x` }, { transport: failing });
    expect(error).toMatchObject({ code: "CAPABILITY_FAILED", message: `ctx.fetch: ${base()}/api/x failed: the connection failed` });
  });

  it("a transport of its own gets the hop's URL, method, headers (secret included) and rule, and its answer is redacted", async () => {
    const calls: { url: string; method: string; authorization: string | null; source: string }[] = [];
    const canned: FetchTransport = async (url, init) => {
      calls.push({ url: url.href, method: init.method, authorization: init.headers.get("authorization"), source: init.rule.source });
      return new Response(`echo ${init.headers.get("authorization")}`, { status: 200, headers: { "x-echo": SECRET } });
    };
    const { answer, seen } = await send({ url: `${base()}/api/x`, method: "put" }, { transport: canned });
    expect(calls).toEqual([{ url: `${base()}/api/x`, method: "PUT", authorization: `Bearer ${SECRET}`, source: `${base()}/api/` }]);
    expect(answer).toMatchObject({ status: 200, body: "echo Bearer [redacted]", headers: { "x-echo": "[redacted]" } });
    expect(seen).toEqual([]);
  });
});
