import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import net from "node:net";
import { api, startServe, type ServeProcess } from "./serve-process.js";
import { runToEnd } from "./redteam-server.js";
import { twoToolSteps, writeFixture } from "./fixture.js";
import { propertyParameters } from "../helpers/property.js";
import { arbitraryFor, type JsonSchemaNode, type SchemaContext } from "../helpers/schema-arbitrary.js";

/*
 * A fuzz of every HTTP route of a real `hookbox serve`, driven by the server's own OpenAPI document
 * (GET /v1/openapi.json): bodies from the very schemas the routes validate with, and mutations of them; paths
 * with real, unknown, encoded, overlong and climbing ids; headers that lie (content type, content length) or
 * overflow; raw bytes that are not HTTP at all. Whatever comes in, the server answers below 500, and every
 * answer is JSON with the error shape `{error: {code, message}}` (a success is JSON too, except the event
 * stream's). A fixed seed in CI; `npm run fuzz` runs many more cases (HOOKBOX_FUZZ_RUNS).
 */

let server: ServeProcess;
let document: { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, JsonSchemaNode> } };
let context: SchemaContext;
/** Ids that exist, so some generated paths reach a real session, run and deployment. */
const real = {
  sessionId: "",
  runId: "",
  pauseId: "pause_00000000000000000000000000000000",
  deploymentId: "",
  name: "policy",
  version: "1",
};

beforeAll(async () => {
  const fixture = writeFixture(
    [
      { name: "acme", key: "acme-key", steps: twoToolSteps, limits: { runsPerMinute: 100_000, requestsPerMinute: 1_000_000 } },
      { name: "globex", key: "globex-key", steps: twoToolSteps },
    ],
    { server: { requestTimeoutMs: 300, maxBodyBytes: 65536 } },
  );
  server = await startServe({ config: fixture.config, store: fixture.store });
  const acme = api(server.url, "acme-key");
  document = (await acme.request("GET", "/v1/openapi.json")).body;
  context = { components: document.components.schemas };
  const ran = await runToEnd(server.url, "acme-key");
  Object.assign(real, { sessionId: ran.sessionId, runId: ran.runId });
  const source = `import { defineScript } from "hookbox";\nexport default defineScript({ name: "policy" });\n`;
  expect((await acme.request("POST", "/v1/scripts", { name: "policy", entry: "p.ts", files: { "p.ts": source } })).status).toBe(201);
  real.deploymentId = (await acme.request("GET", "/v1/deployment")).body.deploymentId;
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

interface Operation {
  method: string;
  path: string;
  body?: JsonSchemaNode;
  /** The document's example body: valid, and naming things that exist (a script, a version). */
  example?: unknown;
  eventStream: boolean;
}

const operations = (): Operation[] =>
  Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      ...(operation.requestBody
        ? {
            body: operation.requestBody.content["application/json"].schema,
            example: operation.requestBody.content["application/json"].example,
          }
        : {}),
      eventStream: Object.values(operation.responses as Record<string, any>).some((r) => r.content?.["text/event-stream"]),
    })),
  );

/** A path parameter: a real id, a well-formed unknown one, or something hostile. */
const parameter = (name: string) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant((real as Record<string, string>)[name] ?? "x") },
    fc.constantFrom("sess_0123456789abcdef0123456789abcdef", "run_0123456789abcdef0123456789abcdef", "0", "-1", "1e400"),
    fc.constantFrom("..", "%2e%2e", "..%2F..%2Fetc%2Fpasswd", "%00", "%ZZ", "%", "%C0%AE", "a%2Fb", "😀", "%F0%9F%98%80"),
    fc.string({ maxLength: 30 }).map(encodeURIComponent),
    fc.integer({ min: 1000, max: 20_000 }).map((n) => "a".repeat(n)),
  );

/** A valid body with one thing broken: a value replaced, a key dropped or added, the whole wrapped or turned to text. */
const mutated = (valid: fc.Arbitrary<unknown>) =>
  fc
    .tuple(valid, fc.nat(), fc.jsonValue({ maxDepth: 2 }), fc.constantFrom("replace", "drop", "add", "wrap", "text"))
    .map(([value, pick, other, how]) => {
      if (how === "wrap") return [value];
      if (how === "text") return JSON.stringify(value);
      const containers: Record<string, unknown>[] = [];
      const walk = (node: unknown) => {
        if (node && typeof node === "object") {
          containers.push(node as Record<string, unknown>);
          for (const child of Object.values(node)) walk(child);
        }
      };
      walk(value);
      if (containers.length === 0) return other;
      const target = containers[pick % containers.length]!;
      const keys = Object.keys(target);
      const key = keys.length ? keys[pick % keys.length]! : "extra";
      if (how === "drop") delete target[key];
      else if (how === "add") target[`unknown${pick % 7}`] = other;
      else target[key] = other;
      return value;
    });

/** Body text: from the schema or the document's example, mutated, any JSON, or not JSON at all. */
const bodyText = (operation: Operation) => {
  const fromSchema = operation.body ? arbitraryFor(operation.body, context) : fc.constant({});
  const valid =
    operation.example === undefined
      ? fromSchema
      : fc.oneof(
          fromSchema,
          fc.constant(operation.example).map((e) => structuredClone(e)),
        );
  return fc.oneof(
    { weight: 4, arbitrary: valid.map((value) => JSON.stringify(value)) },
    { weight: 4, arbitrary: mutated(valid).map((value) => JSON.stringify(value)) },
    fc.jsonValue().map((value) => JSON.stringify(value)),
    fc.string({ maxLength: 200 }),
    fc.constantFrom("", "{", "[".repeat(5000), `{"a":${"[".repeat(40)}1${"]".repeat(40)}}`, "\uFEFF{}", "null", `{"__proto__":{"x":1}}`),
    fc.integer({ min: 60_000, max: 70_000 }).map((n) => JSON.stringify({ prompt: "p".repeat(n) })),
  );
};

const headerValue = fc.oneof(
  fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\t\x20-\x7e]/g, "")),
  fc.constant(""),
);

const request = () =>
  fc.constantFrom(...operations()).chain((operation) =>
    fc.record({
      operation: fc.constant(operation),
      method: fc.oneof(
        { weight: 8, arbitrary: fc.constant(operation.method) },
        fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"),
      ),
      path: fc.tuple(...[...operation.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => parameter(name!))).map((values) => {
        let index = 0;
        return operation.path.replace(/\{\w+\}/g, () => values[index++] as string);
      }),
      query: fc.option(
        fc.dictionary(fc.constantFrom("limit", "offset", "after", "since", "x"), fc.string({ maxLength: 20 }), { maxKeys: 2 }),
      ),
      body: fc.option(bodyText(operation), { freq: 8 }),
      auth: fc.oneof({ weight: 8, arbitrary: fc.constant("acme") }, fc.constantFrom("globex", "none", "garbage")),
      contentType: fc.constantFrom(
        "application/json",
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "none",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin1",
      ),
      lastEventId: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, fc.nat().map(String), headerValue),
      traceparent: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, headerValue),
    }),
  );

const keys: Record<string, string | undefined> = { acme: "acme-key", globex: "globex-key", none: undefined, garbage: "not-a-key" };

/** Asserts one answer: below 500, and JSON with the error shape unless it is a success (the event stream's may be SSE). */
function expectAnswer(status: number, contentType: string, text: string, what: string): void {
  expect(status, what).toBeLessThan(500);
  if (status < 300 && contentType.startsWith("text/event-stream")) return;
  // A finished run's stream read past its end is 204 (documented): no body at all.
  if (status === 204) return void expect(text, what).toBe("");
  expect(contentType, `${what} -> ${status} ${text.slice(0, 200)}`).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
  if (status >= 400) {
    expect(typeof body.error?.code, `${what} -> ${status} ${text.slice(0, 200)}`).toBe("string");
    expect(typeof body.error?.message, what).toBe("string");
  }
}

describe("fuzzing every route from its OpenAPI document", () => {
  it("answers every generated request below 500, as JSON with the error shape", async () => {
    await fc.assert(
      fc.asyncProperty(request(), async (input) => {
        const query = input.query && Object.keys(input.query).length ? `?${new URLSearchParams(input.query)}` : "";
        const headers: Record<string, string> = {};
        const key = keys[input.auth];
        if (key) headers.authorization = `Bearer ${key}`;
        if (input.contentType !== "none") headers["content-type"] = input.contentType;
        if (input.lastEventId !== null) headers["last-event-id"] = input.lastEventId;
        if (input.traceparent !== null) headers.traceparent = input.traceparent;
        const controller = new AbortController();
        const what = `${input.method} ${input.path.slice(0, 120)}${query} body ${String(input.body).slice(0, 120)}`;
        const response = await fetch(`${server.url}${input.path}${query}`, {
          method: input.method,
          headers,
          signal: controller.signal,
          ...(input.body !== null && !["GET", "HEAD"].includes(input.method) ? { body: input.body } : {}),
        });
        const contentType = response.headers.get("content-type") ?? "";
        if (response.status < 300 && contentType.startsWith("text/event-stream")) {
          controller.abort(); // a live stream: its answer is the stream, not a body
          return;
        }
        expectAnswer(response.status, contentType, await response.text(), what);
      }),
      // ~5 ms a case: 150 in the suite, HOOKBOX_FUZZ_RUNS / 10 under npm run fuzz.
      { ...propertyParameters(150, { share: 10 }), endOnFailure: true },
    );
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  }, 300_000);

  it("answers malformed HTTP (content-length lies, huge headers, bad request lines) with JSON, never 5xx", async () => {
    const body = JSON.stringify({ defaults: {} });
    const raw = fc.oneof(
      // A body shorter than its Content-Length: the rest never comes.
      fc
        .nat({ max: 1000 })
        .map(
          (more) =>
            `POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer acme-key\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 1 + more}\r\n\r\n${body}`,
        ),
      // Longer than its Content-Length: the rest is read as the next request.
      fc
        .string({ maxLength: 50 })
        .map(
          (tail) =>
            `POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer acme-key\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n${body}${tail}`,
        ),
      fc
        .constantFrom("-1", "abc", "1e3", "99999999999999999999", "5, 6")
        .map((length) => `POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer acme-key\r\nContent-Length: ${length}\r\n\r\n{}`),
      fc
        .integer({ min: 17_000, max: 100_000 })
        .map((n) => `GET /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer acme-key\r\nX-Big: ${"a".repeat(n)}\r\n\r\n`),
      fc
        .integer({ min: 200, max: 2000 })
        .map((n) => `GET /v1/sessions HTTP/1.1\r\nHost: x\r\n${Array.from({ length: n }, (_, i) => `X-H${i}: v`).join("\r\n")}\r\n\r\n`),
      fc.integer({ min: 9000, max: 40_000 }).map((n) => `GET /v1/${"a".repeat(n)} HTTP/1.1\r\nHost: x\r\n\r\n`),
      fc.constantFrom(
        "GARBAGE\r\n\r\n",
        "GET / HTTP/9.9\r\n\r\n",
        "GET /v1/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nAuthorization: Bearer acme-key\r\n\r\nzz\r\n",
        "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
        "GET /v1/sessions HTTP/1.1\nHost: x\nAuthorization: Bearer acme-key\n\n",
        "GET /v1/sessions HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        "GET /v1/sessions\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
      ),
      fc.string({ maxLength: 300 }),
    );
    await fc.assert(
      fc.asyncProperty(raw, async (text) => {
        const answers = parseResponses(await exchange(text));
        for (const answer of answers) expectAnswer(answer.status, answer.contentType, answer.body, JSON.stringify(text.slice(0, 120)));
      }),
      // Up to a second or two a case (a lie is answered when the request timeout ends it).
      { ...propertyParameters(25, { share: 1000 }), endOnFailure: true },
    );
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  }, 300_000);
});

/**
 * Writes `text` on a fresh connection and reads until the server closes it, or until it has been quiet for a
 * while after answering (a kept-alive connection), or 5 s pass without an answer.
 */
function exchange(text: string): Promise<string> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(text));
    let received = "";
    let timer = setTimeout(() => done(), 5000);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(received);
    };
    socket.setEncoding("latin1").on("data", (chunk) => {
      received += chunk;
      clearTimeout(timer);
      timer = setTimeout(done, 1000); // longer than the server's request timeout (300 ms) and its check interval
    });
    socket.on("close", done);
    socket.on("error", done);
  });
}

/** The complete responses in `text` (status, content type, body by Content-Length). */
function parseResponses(text: string): { status: number; contentType: string; body: string }[] {
  const answers: { status: number; contentType: string; body: string }[] = [];
  let rest = text;
  while (rest.startsWith("HTTP/1.1 ")) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) break;
    const head = rest.slice(0, end).split("\r\n");
    const header = (name: string) =>
      head
        .find((line) => line.toLowerCase().startsWith(`${name}:`))
        ?.slice(name.length + 1)
        .trim() ?? "";
    const length = Number(header("content-length") || 0);
    answers.push({
      status: Number(head[0]!.split(" ")[1]),
      contentType: header("content-type"),
      body: rest.slice(end + 4, end + 4 + length),
    });
    rest = rest.slice(end + 4 + length);
  }
  return answers;
}
