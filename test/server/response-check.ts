import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { openApiDocument } from "../../src/server/openapi.js";
import { isInspectorPath } from "../../src/server/inspector.js";
import { SseMessages } from "../../scripts/sse-messages.mjs";

/*
 * Every answer the tests get from a hookbox server is checked against the OpenAPI document the server serves.
 * startServe() registers each server it starts (checkAnswersOf), and from then on the test process's fetch checks
 * every response from that server, whoever calls it (api(), readEvents(), a test's own fetch): the status must be
 * one the route documents, the content type the one documented for it, a JSON body must validate against its
 * schema (an error against Error), and each SSE message's data against StreamEvent as the stream is read. A path
 * no route has is an Error; the inspector's pages (/ and /ui/) and CORS preflights (OPTIONS) are not API answers.
 * A breach rejects the fetch (or errors the stream), so the test that made the request fails naming the route.
 */

interface ResponseDoc {
  content?: Record<string, { schema?: { $ref?: string } }>;
}
interface Document {
  paths: Record<string, Record<string, { responses: Record<string, ResponseDoc> }>>;
  components: { schemas: Record<string, object> };
}

const doc = openApiDocument() as Document;
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: "doc", components: doc.components });
const compiled = new Map<string, ValidateFunction>();
const validator = (ref: string) => {
  let validate = compiled.get(ref);
  if (!validate) compiled.set(ref, (validate = ajv.compile({ $ref: `doc${ref}` })));
  return validate;
};

// Templates with fewer parameters first, so /v1/deployment wins over a template that would also match it.
const routes = Object.entries(doc.paths)
  .map(([template, methods]) => ({
    template,
    methods,
    params: (template.match(/\{/g) ?? []).length,
    pattern: new RegExp(`^${template.replace(/\{\w+\}/g, "[^/]+")}$`),
  }))
  .sort((a, b) => a.params - b.params);

function fail(what: string, validate: ValidateFunction, body: unknown): never {
  throw new Error(
    `${what}: the response breaks its documented schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 2000)}`,
  );
}

const errorCode = (body: unknown) => (body as { error?: { code?: unknown } } | undefined)?.error?.code;
const mediaType = (contentType: string | null) => contentType?.split(";")[0].trim().toLowerCase() ?? "";

/** Throws when a response does not match what the document says the route answers (`body`: the parsed JSON, or the text). */
export function checkResponse(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
  const path = new URL(url, "http://x").pathname;
  const where = `${method} ${path} ${status}`;
  const type = mediaType(contentType);
  const route = routes.find((candidate) => candidate.pattern.test(path) && candidate.methods[method.toLowerCase()]);
  let ref = "#/components/schemas/Error";
  // Answered by the HTTP parser before any route sees the request (docs/http-api.md): the error shape on any path.
  const beforeRouting = status === 408 || status === 431 || (status === 400 && errorCode(body) === "MALFORMED_REQUEST");
  if (route && !beforeRouting) {
    const documented = route.methods[method.toLowerCase()].responses[String(status)];
    if (!documented) throw new Error(`${where}: ${method} ${route.template} does not document status ${status}`);
    const types = Object.keys(documented.content ?? {});
    if (types.length === 0) {
      if (body !== "" && body !== undefined) throw new Error(`${where}: documented without a body, answered ${String(body).slice(0, 200)}`);
      return;
    }
    if (!types.includes(type)) throw new Error(`${where}: answered ${contentType ?? "no content type"}, documented ${types.join(" or ")}`);
    ref = documented.content![type].schema?.$ref ?? ref;
  } else if (status < 400) {
    throw new Error(`${where}: answered ${status}, but the document has no ${method} ${path}`);
  }
  if (status >= 400 && type !== "application/json") throw new Error(`${where}: an error answered as ${contentType ?? "no content type"}`);
  if (type !== "application/json") return;
  const validate = validator(ref);
  if (!validate(body)) fail(where, validate, body);
}

/** Throws when one SSE message's data is not a StreamEvent. */
export function checkStreamEvent(data: unknown): void {
  const validate = validator("#/components/schemas/StreamEvent");
  if (!validate(data)) fail("an SSE message", validate, data);
}

/** Passes an SSE body through, checking each message's `data:` as it goes by; a breach errors the stream. */
function checkedEventStream(body: ReadableStream<Uint8Array>, where: string): ReadableStream<Uint8Array> {
  const sse = new SseMessages();
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        for (const { data } of sse.push(chunk)) {
          try {
            checkStreamEvent(JSON.parse(data));
          } catch (error) {
            controller.error(new Error(`${where}: ${(error as Error).message}`));
            return;
          }
        }
        controller.enqueue(chunk);
      },
    }),
  );
}

const checkedOrigins = new Set<string>();
let installed = false;

/** From now on, every answer this process's fetch gets from the hookbox server at `url` is checked. */
export function checkAnswersOf(url: string): void {
  checkedOrigins.add(new URL(url).origin);
  if (installed) return;
  installed = true;
  const unchecked = globalThis.fetch;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const response = await unchecked(input, init);
    if (!checkedOrigins.has(url.origin) || method === "OPTIONS" || isInspectorPath(url.pathname)) return response;
    const contentType = response.headers.get("content-type");
    if (mediaType(contentType) === "text/event-stream" && response.body) {
      checkResponse(method, url.href, response.status, contentType, undefined);
      const checked = new Response(checkedEventStream(response.body, `${method} ${url.pathname}`), {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
      return checked;
    }
    const text = await response.clone().text();
    let body: unknown = text;
    if (mediaType(contentType) === "application/json") body = JSON.parse(text);
    checkResponse(method, url.href, response.status, contentType, body);
    return response;
  };
}
