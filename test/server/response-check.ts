import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { openApiDocument } from "../../src/server/openapi.js";

/*
 * Every response the server tests receive through api() and readEvents() is checked against the OpenAPI
 * document the server serves: a success against its route's schema for that status (a status the route does
 * not document fails), an error against the Error shape, and each SSE message's data against StreamEvent.
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

/** Throws when a JSON response does not match what the document says the route answers. */
export function checkResponse(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
  const path = new URL(url, "http://x").pathname;
  const route = routes.find((candidate) => candidate.pattern.test(path) && candidate.methods[method.toLowerCase()]);
  const where = `${method} ${path} ${status}`;
  if (status >= 400 && contentType?.includes("application/json")) {
    const validate = validator("#/components/schemas/Error");
    if (!validate(body)) fail(where, validate, body);
    return;
  }
  if (!route) return; // not an API route (the inspector's pages)
  const documented = route.methods[method.toLowerCase()].responses[String(status)];
  if (!documented) throw new Error(`${where}: ${route.template} does not document status ${status}`);
  const ref = documented.content?.["application/json"]?.schema?.$ref;
  if (!ref || !contentType?.includes("application/json")) return;
  const validate = validator(ref);
  if (!validate(body)) fail(where, validate, body);
}

/** Throws when one SSE message's data is not a StreamEvent. */
export function checkStreamEvent(data: unknown): void {
  const validate = validator("#/components/schemas/StreamEvent");
  if (!validate(data)) fail("an SSE message", validate, data);
}
