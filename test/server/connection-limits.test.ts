import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http from "node:http";
import net from "node:net";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { api, startServe, type ServeProcess } from "./serve-process.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * Idle and slow connections against a real `hookbox serve` started with a low descriptor limit (`ulimit -n
 * 256`): more idle sockets than the server has descriptors must not turn an authenticated request into a 500,
 * and a client that never finishes its headers is cut off; a config reload the server cannot read for want of
 * descriptors is the server's 503, not the config's 400, and the old config keeps serving.
 */

let server: ServeProcess;
let crowded: ServeProcess;
let crowdedConfig: string;
const DESCRIPTORS = 256;
const sha = (key: string) => createHash("sha256").update(key).digest("hex");

/** A tenant with a sandboxed script: creating a session reads its source (the tenant record), which needs a descriptor. */
const fixture = () =>
  writeFixture(
    [
      {
        name: "acme",
        key: "acme-key",
        steps: twoToolSteps,
        scripts: { "policy.ts": `export default { name: "policy", hooks: { beforeToolCall() {} } };\n` },
      },
    ],
    { server: { requestTimeoutMs: 1000, adminKeys: [{ sha256: sha("admin-key") }] } },
  );

beforeAll(async () => {
  const plain = fixture();
  server = await startServe({ config: plain.config, store: plain.store, shellPrelude: `ulimit -n ${DESCRIPTORS}` });
  // The same limit, but 200 descriptors are already held when the server starts (inherited from the shell), so
  // the connection cap, computed from the limit alone, does not keep descriptors free: exhaustion happens.
  const held = fixture();
  crowdedConfig = held.config;
  crowded = await startServe({
    config: held.config,
    store: held.store,
    shellPrelude: `ulimit -n ${DESCRIPTORS}\nfor fd in $(seq 20 219); do eval "exec $fd</dev/null"; done`,
  });
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.stop(), crowded?.stop()]);
});

/** Opens `count` TCP connections that never send a byte; resolves once each is connected or refused. */
async function idleSockets(count: number, url = server.url): Promise<net.Socket[]> {
  const { hostname, port } = new URL(url);
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Socket>((resolve) => {
          const socket = net.connect(Number(port), hostname);
          socket.on("error", () => undefined);
          socket.once("connect", () => resolve(socket));
          socket.once("close", () => resolve(socket));
        }),
    ),
  );
  return sockets;
}

/** One request over `agent` (a kept-alive connection when the agent has one). */
function request(
  agent: http.Agent,
  method: string,
  path: string,
  body?: unknown,
  url = server.url,
  key = "acme-key",
): Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      `${url}${path}`,
      {
        method,
        agent,
        headers: { authorization: `Bearer ${key}`, ...(text ? { "content-type": "application/json" } : {}) },
      },
      (res) => {
        let data = "";
        res.setEncoding("utf8").on("data", (chunk) => (data += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(data), headers: res.headers }));
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

describe("connections beyond the descriptor limit", () => {
  it("keeps an authenticated request answered (never 500) while more idle sockets than descriptors are open", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    expect((await request(agent, "GET", "/v1/sessions")).status).toBe(200);
    const sockets = await idleSockets(DESCRIPTORS + 150);
    try {
      // Over the connection opened before the flood: the server still has descriptors to do its work.
      const kept = await request(agent, "POST", "/v1/sessions", {});
      expect(kept.status, JSON.stringify(kept.body)).toBe(201);
      // A new connection: served, refused at the door, or a clear 503; never an internal error.
      const fresh = await api(server.url, "acme-key")
        .request("POST", "/v1/sessions", {})
        .catch((error: Error) => ({ status: 0, body: error.message }));
      expect(fresh.status, JSON.stringify(fresh.body)).not.toBe(500);
      if (fresh.status >= 400) expect(fresh.body).toMatchObject({ error: { code: expect.any(String) } });
    } finally {
      for (const socket of sockets) socket.destroy();
      agent.destroy();
    }
    // Once the server has seen the idle sockets close (a moment after they are destroyed), new connections are served.
    const created = () =>
      api(server.url, "acme-key")
        .request("POST", "/v1/sessions", {})
        .then(
          (answer) => answer.status,
          () => 0,
        );
    await expect.poll(created, { timeout: 10_000 }).toBe(201);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(server.stderr()).not.toMatch(/EMFILE/);
  });

  it("answers 503 SERVER_BUSY, not a 500, when the server runs out of descriptors anyway, and recovers", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    expect((await request(agent, "GET", "/v1/sessions", undefined, crowded.url)).status).toBe(200);
    const sockets = await idleSockets(DESCRIPTORS, crowded.url);
    // Connected is not yet accepted: wait until the server holds (nearly) all the descriptors it may.
    const open = () => readdirSync(`/proc/${crowded.child.pid}/fd`).length;
    await expect.poll(open, { timeout: 10_000 }).toBeGreaterThanOrEqual(DESCRIPTORS - 2);
    try {
      const answer = await request(agent, "POST", "/v1/sessions", {}, crowded.url);
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect(answer.body).toMatchObject({ error: { code: "SERVER_BUSY", message: expect.stringContaining("file descriptors") } });
      expect(answer.headers["retry-after"]).toBe("1");
    } finally {
      for (const socket of sockets) socket.destroy();
      agent.destroy();
    }
    // Freed descriptors: served again.
    await expect
      .poll(
        () =>
          api(crowded.url, "acme-key")
            .request("POST", "/v1/sessions", {})
            .then(
              (answer) => answer.status,
              () => 0,
            ),
        { timeout: 10_000 },
      )
      .toBe(201);
  });

  it("a config reload the server cannot read for want of descriptors is 503 SERVER_BUSY naming EMFILE; the old config stays", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    // The connection the reload will come over, opened while descriptors are free.
    expect((await request(agent, "GET", "/v1/sessions", undefined, crowded.url)).status).toBe(200);
    // The file on disk now rotates acme's key: a reload that read it would make "acme-key" stop working.
    const original = readFileSync(crowdedConfig, "utf8");
    const rotated = JSON.parse(original);
    rotated.tenants[0].apiKeys = [{ sha256: sha("acme-key-2") }];
    writeFileSync(crowdedConfig, JSON.stringify(rotated));
    const sockets = await idleSockets(DESCRIPTORS, crowded.url);
    const open = () => readdirSync(`/proc/${crowded.child.pid}/fd`).length;
    await expect.poll(open, { timeout: 10_000 }).toBeGreaterThanOrEqual(DESCRIPTORS - 2);
    try {
      const answer = await request(agent, "POST", "/v1/admin/reload", undefined, crowded.url, "admin-key");
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect(answer.body.error.code).toBe("SERVER_BUSY");
      expect(answer.body.error.message).toContain("the config was not reloaded: the server is out of file descriptors");
      expect(answer.body.error.message).toContain("EMFILE");
      expect(answer.body.error.message).toContain("the old config stays");
      expect(answer.headers["retry-after"]).toBe("1");
      // SIGHUP says the same on stderr, not that the config was refused.
      crowded.child.kill("SIGHUP");
      await expect
        .poll(() => crowded.stderr(), { timeout: 10_000 })
        .toContain("SIGHUP: the config was not reloaded: the server is out of file descriptors");
      expect(crowded.stderr()).not.toContain("the new config was refused");
    } finally {
      for (const socket of sockets) socket.destroy();
      agent.destroy();
    }
    const status = (key: string) =>
      api(crowded.url, key)
        .request("POST", "/v1/sessions", {})
        .then(
          (answer) => answer.status,
          () => 0,
        );
    // The old config serves: the old key works, the rotated one does not yet.
    await expect.poll(() => status("acme-key"), { timeout: 10_000 }).toBe(201);
    expect(await status("acme-key-2")).toBe(401);
    // With descriptors again, the same reload goes through.
    expect(await api(crowded.url, "admin-key").request("POST", "/v1/admin/reload")).toMatchObject({
      status: 200,
      body: { reloaded: true, tenants: ["acme"] },
    });
    expect(await status("acme-key-2")).toBe(201);
    writeFileSync(crowdedConfig, original);
  });

  it("cuts off a connection that does not finish its request within requestTimeoutMs (slowloris)", async () => {
    const { hostname, port } = new URL(server.url);
    const started = Date.now();
    const socket = net.connect(Number(port), hostname, () => socket.write("POST /v1/sessions HTTP/1.1\r\nHost: x\r\n"));
    let answer = "";
    socket.setEncoding("utf8").on("data", (chunk) => (answer += chunk));
    await new Promise((resolve) => socket.once("close", resolve));
    // The default would be Node's 300 s; the configured second (plus the one-second check interval) ends it.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });
});
