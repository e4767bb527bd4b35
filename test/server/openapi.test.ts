import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ajv2020 } from "ajv/dist/2020.js";
import { createApp } from "../../src/server/app.js";
import { loadServerConfig } from "../../src/server/config.js";
import { SessionManager } from "../../src/session/manager.js";
import { openMemoryStore } from "../../src/store/index.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { createHash } from "node:crypto";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { checkResponse, checkStreamEvent } from "./response-check.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * GET /v1/openapi.json against the server itself: every route the app answers is documented (and nothing else
 * is), and a client that builds each request from the document alone (path, parameters, the body's example)
 * gets past the server's validation; a body the document's schema refuses, the server refuses too.
 */
interface Operation {
  parameters: { name: string; in: string }[];
  requestBody?: { required: boolean; content: { "application/json": { schema: { $ref: string }; example: unknown } } };
  security?: unknown[];
  responses: Record<string, unknown>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, object> };
}

let server: ServeProcess;
let fixture: ReturnType<typeof writeFixture>;
let doc: Document;
const client = () => api(server.url, "acme-key");

beforeAll(async () => {
  fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }], {
    server: { adminKeys: [{ sha256: createHash("sha256").update("admin-key").digest("hex") }] },
  });
  server = await startServe({ config: fixture.config, store: fixture.store });
  const response = await api(server.url, undefined).request("GET", "/v1/openapi.json");
  expect(response.status).toBe(200);
  doc = response.body;
});
afterAll(async () => {
  await server?.stop();
});

const operationsOf = (document: Document) =>
  Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));

describe("GET /v1/openapi.json", () => {
  it("is an OpenAPI 3.1 document served without a key", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(operationsOf(doc).length).toBeGreaterThan(0);
  });

  it("documents exactly the routes the app answers", () => {
    const config = loadServerConfig(fixture.config);
    const manager = new SessionManager({ store: openMemoryStore(), runtimeFor: () => Promise.reject(new Error("not used")) });
    const app = createApp({
      config,
      manager,
      draining: () => false,
      admin: {
        metrics: new ServerMetrics(),
        reload: async () => ({ tenants: [] }),
        gauges: { liveRuns: () => 0, storeBytes: async () => new Map() },
      },
    });
    const answered = app.routes
      .filter((route) => route.method !== "ALL") // middleware
      .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, "{$1}")}`);
    const documented = operationsOf(doc).map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(answered.length).toBeGreaterThan(0);
    expect([...new Set(answered)].sort()).toEqual([...documented].sort());
  });

  it("lists 503 SERVER_BUSY on exactly the routes a server out of descriptors answers it on", async () => {
    // Every service a handler reaches (the store, runtimes, the sandbox pool, deployments, the config file, metrics'
    // gauges) fails as it does when the process has no descriptor left.
    const outOfDescriptors = () => Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" });
    const exhausted = <T>() =>
      new Proxy({} as T & object, {
        get: (_target, key) =>
          key === "then" || typeof key === "symbol"
            ? undefined
            : () => {
                throw outOfDescriptors();
              },
      });
    const manager = new SessionManager({ store: exhausted(), runtimeFor: () => Promise.reject(outOfDescriptors()) });
    const app = createApp({
      config: loadServerConfig(fixture.config),
      manager,
      draining: () => false,
      admin: {
        metrics: new ServerMetrics(),
        reload: () => Promise.reject(outOfDescriptors()),
        gauges: { liveRuns: () => 0, storeBytes: () => Promise.reject(outOfDescriptors()) },
      },
      policy: { store: exhausted(), pool: exhausted(), deployments: exhausted() },
    });
    const busy: string[] = [];
    for (const { path, method, op } of operationsOf(doc)) {
      const ids: Record<string, string> = { sessionId: "sess_x", runId: "run_x", version: "1" };
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? "x");
      const body = op.requestBody?.content["application/json"].example;
      const key = op.security?.length === 0 ? undefined : op.security ? "admin-key" : "acme-key";
      const response = await app.request(url, {
        method: method.toUpperCase(),
        headers: {
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const where = `${method.toUpperCase()} ${path}`;
      expect(response.status, where).not.toBe(500);
      if (response.status === 503) {
        expect(await response.json(), where).toMatchObject({ error: { code: "SERVER_BUSY" } });
        expect(response.headers.get("retry-after"), where).toBe("1");
        busy.push(where);
      }
    }
    // /healthz's 503 is another one: its node cannot reach a PostgreSQL store (test/server/cluster.test.ts).
    const documented = operationsOf(doc)
      .filter(({ op, path }) => "503" in op.responses && path !== "/healthz")
      .map(({ path, method }) => `${method.toUpperCase()} ${path}`);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy.sort()).toEqual(documented.sort());
  });

  it("every schema reference resolves and every example satisfies its schema", () => {
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ $id: "doc", components: doc.components }, "doc");
    for (const { path, method, op } of operationsOf(doc)) {
      const body = op.requestBody?.content["application/json"];
      if (!body) continue;
      const validate = ajv.compile({ $ref: `doc${body.schema.$ref}` });
      expect(validate(body.example), `${method} ${path}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it("a request built from the document passes the server's validation for every route", async () => {
    const created = await client().request("POST", "/v1/sessions", {});
    const sessionId = created.body.sessionId as string;
    const started = await client().request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both" });
    const runId = started.body.runId as string;
    await readEvents(server.url, "acme-key", runId);
    const ids: Record<string, string> = { sessionId, runId };

    // Deletes last: they remove the session the other routes use.
    const ordered = operationsOf(doc).sort((a, b) => Number(a.method === "delete") - Number(b.method === "delete"));
    for (const { path, method, op } of ordered) {
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!);
      const body = op.requestBody?.content["application/json"].example;
      const caller = op.security?.length === 0 ? api(server.url, undefined) : op.security ? api(server.url, "admin-key") : client();
      const where = `${method.toUpperCase()} ${path}`;
      if (path.endsWith("/events")) {
        const events = await readEvents(server.url, "acme-key", runId, { lastEventId: "0" });
        expect(events.status, where).toBe(200);
        continue;
      }
      const response = await caller.request(method.toUpperCase(), url, body);
      expect(response.status, `${where}: ${JSON.stringify(response.body)}`).toBeLessThan(500);
      expect(response.status, `${where}: ${JSON.stringify(response.body)}`).not.toBe(400);
      expect(response.status, where).not.toBe(401);
      // The document's success codes are what a valid request gets, or a state conflict (nothing to resume or cancel).
      expect(Object.keys(op.responses).map(Number), where).toContain(response.status);
    }
  });

  it("a body missing a field the document marks required is refused with 400 naming it", async () => {
    const created = await client().request("POST", "/v1/sessions", {});
    const started = await client().request("POST", `/v1/sessions/${created.body.sessionId}/runs`, { prompt: "record both" });
    await readEvents(server.url, "acme-key", started.body.runId);
    const ids: Record<string, string> = { sessionId: created.body.sessionId, runId: started.body.runId };
    let checked = 0;
    for (const { path, method, op } of operationsOf(doc)) {
      const content = op.requestBody?.content["application/json"];
      if (!content) continue;
      const schema = doc.components.schemas[content.schema.$ref.split("/").at(-1)!] as { required?: string[] };
      for (const field of schema.required ?? []) {
        const body = { ...(content.example as object) } as Record<string, unknown>;
        delete body[field];
        const url = path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!);
        const response = await client().request(method.toUpperCase(), url, body);
        expect(response.status, `${method} ${path} without ${field}`).toBe(400);
        expect(response.body.error.path).toBe(`$.${field}`);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });
});

describe("the tests' check of every answer against the document", () => {
  it("refuses an undocumented status, a content type or a body off the document, an unknown route's success, an unknown event", async () => {
    const error = { error: { code: "X", message: "m" } };
    expect(() => checkResponse("GET", "/v1/sessions", 418, "application/json", error)).toThrow(/does not document status 418/);
    expect(() => checkResponse("GET", "/v1/sessions", 200, "text/plain", "x")).toThrow(/documented application\/json/);
    expect(() => checkResponse("GET", "/v1/sessions", 200, "application/json", { sessions: "none" })).toThrow(
      /breaks its documented schema/,
    );
    expect(() => checkResponse("GET", "/v1/sessions", 401, "application/json", { message: "no key" })).toThrow(/breaks/);
    expect(() => checkResponse("GET", "/v1/nothing", 200, "application/json", {})).toThrow(/has no GET \/v1\/nothing/);
    expect(() => checkResponse("GET", "/v1/runs/run_x/events", 204, null, "unexpected")).toThrow(/without a body/);
    expect(() => checkStreamEvent({ type: "no-such-event", seq: 1 })).toThrow(/breaks its documented schema/);
    // What the server answers passes, through the test process's own fetch.
    expect((await fetch(`${server.url}/v1/sessions`, { headers: { authorization: "Bearer acme-key" } })).status).toBe(200);
    expect(() => checkResponse("GET", "/v1/sessions", 200, "application/json; charset=UTF-8", { sessions: [] })).not.toThrow();
  });
});
