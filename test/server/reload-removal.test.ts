import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import http from "node:http";
import { readFileSync, writeFileSync } from "node:fs";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { checkResponse } from "./response-check.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * A config reload that removes a tenant while requests of that tenant are in flight (past the key check, waiting
 * for their bodies), on a real `hookbox serve` with a real reload (POST /v1/admin/reload): each is answered 401
 * TENANT_REMOVED, never a 500, and the tenant that stays is served as before.
 */

const sha = (key: string) => createHash("sha256").update(key).digest("hex");
let server: ServeProcess;
let fixture: ReturnType<typeof writeFixture>;

beforeAll(async () => {
  fixture = writeFixture(
    [
      { name: "acme", key: "acme-key", steps: twoToolSteps },
      { name: "globex", key: "globex-key", steps: twoToolSteps },
    ],
    { server: { adminKeys: [{ sha256: sha("admin-key") }] } },
  );
  server = await startServe({ config: fixture.config, store: fixture.store });
});
afterAll(async () => {
  await server?.stop();
});

interface HeldRequest {
  /** Sends the rest of the body and resolves with the answer. */
  finish(): Promise<{ status: number; body: any }>;
}

/**
 * A request whose headers and the first half of its JSON body are sent now; the server has checked its key and
 * waits in the route for the rest of the body until finish().
 */
function heldRequest(method: string, path: string, key: string, body: unknown): HeldRequest {
  const text = JSON.stringify(body);
  const half = Math.floor(text.length / 2);
  const url = new URL(path, server.url);
  let answer!: Promise<{ status: number; body: any }>;
  const request = http.request(url, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(text) },
  });
  answer = new Promise((resolve, reject) => {
    request.on("error", reject);
    request.on("response", (response) => {
      let data = "";
      response.setEncoding("utf8").on("data", (chunk) => (data += chunk));
      response.on("end", () => {
        const parsed = JSON.parse(data);
        checkResponse(method, path, response.statusCode!, response.headers["content-type"] ?? null, parsed);
        resolve({ status: response.statusCode!, body: parsed });
      });
    });
  });
  request.write(text.slice(0, half));
  return {
    finish() {
      request.end(text.slice(half));
      return answer;
    },
  };
}

describe("a reload that removes a tenant with requests in flight", () => {
  it("answers them 401 TENANT_REMOVED (never a 500); the other tenant goes on", async () => {
    const globex = api(server.url, "globex-key");
    const { body: session } = await globex.request("POST", "/v1/sessions", {});
    const held = [
      heldRequest("POST", "/v1/sessions", "globex-key", { defaults: { maxIterations: 3 } }),
      heldRequest("POST", `/v1/sessions/${session.sessionId}/runs`, "globex-key", { prompt: "record both" }),
      heldRequest("POST", "/v1/scripts", "globex-key", {
        name: "p",
        entry: "p.ts",
        files: { "p.ts": 'import { defineScript } from "hookbox";\nexport default defineScript({ hooks: {} });\n' },
      }),
    ];
    // The server reads each connection's headers as they come; one answered request on a newer connection
    // after them means the held ones are past the key check and waiting for their bodies.
    expect((await api(server.url, undefined).request("GET", "/healthz")).status).toBe(200);

    const config = JSON.parse(readFileSync(fixture.config, "utf8"));
    writeFileSync(
      fixture.config,
      JSON.stringify({ ...config, tenants: config.tenants.filter((t: { name: string }) => t.name !== "globex") }),
    );
    expect(await api(server.url, "admin-key").request("POST", "/v1/admin/reload")).toMatchObject({
      status: 200,
      body: { reloaded: true, tenants: ["acme"] },
    });

    for (const answer of await Promise.all(held.map((request) => request.finish()))) {
      expect(answer).toMatchObject({ status: 401, body: { error: { code: "TENANT_REMOVED" } } });
      expect(answer.body.error.message).toContain("tenant globex");
    }
    expect(server.stderr()).not.toContain("the server failed on this request");
    // A new request with the removed key is an unknown key, as after a restart without the tenant.
    expect(await globex.request("POST", "/v1/sessions", {})).toMatchObject({ status: 401, body: { error: { code: "UNAUTHORIZED" } } });

    const acme = api(server.url, "acme-key");
    const { body: kept } = await acme.request("POST", "/v1/sessions", {});
    const started = await acme.request("POST", `/v1/sessions/${kept.sessionId}/runs`, { prompt: "record both" });
    expect(started.status).toBe(202);
    const read = await readEvents(server.url, "acme-key", started.body.runId);
    expect(read.messages.at(-1)!.event).toMatchObject({ type: "run-finished", status: "completed" });
  });
});
