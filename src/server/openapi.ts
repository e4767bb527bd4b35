import { z } from "zod";
import { packageVersion } from "../package-root.js";
import { JsonSchema } from "../turns/json.js";
import { ApprovalBody, ContinueBody, CreateSessionBody, ForkBody, StartRunBody, StreamTokenBody } from "./bodies.js";
import { UsageReport } from "./usage-route.js";
import { ApprovalList, RunList } from "./list-routes.js";
import { EventSchema, StreamEventSchema, TextDeltaEventSchema, eventSchemas } from "../events/schema.js";
import {
  Deployment,
  DeploymentHistory,
  Health,
  RecordedCaseFile,
  ReplayResult,
  RunView,
  ScriptList,
  ScriptVersion,
  ScriptVersions,
  SessionList,
  SessionView,
  ShadowReport,
} from "./response-schemas.js";
import { DeployBody, ReplayBody, UploadBody } from "./policy-routes.js";

/*
 * The server's OpenAPI 3.1 document, served at GET /v1/openapi.json. Request bodies are the very zod schemas
 * the routes validate with (bodies.ts), turned into JSON Schema 2020-12 (OpenAPI 3.1's dialect) by zod's own
 * z.toJSONSchema, so the document cannot drift from validation. Each operation below matches one route in
 * app.ts; test/server/openapi.test.ts fails when a route is missing here or an example stops validating.
 */

const SessionCreated = z.object({ sessionId: z.string().meta({ description: "sess_ followed by 32 hex digits" }) });
const RunStarted = z.object({
  runId: z.string().meta({ description: "run_ followed by 32 hex digits" }),
  inferenceId: z.string().meta({ description: "inf_ followed by 32 hex digits" }),
});
const ErrorBody = z.object({
  error: z.object({
    code: z.string().meta({ description: "stable machine-readable code, e.g. VALIDATION, NOT_FOUND, SESSION_BUSY" }),
    message: z.string(),
    path: z.string().optional().meta({ description: "JSON path of the offending field, when there is one" }),
  }),
});
const JsonObject = z.record(z.string(), JsonSchema).meta({ description: "a JSON object: see docs/http-api.md for its fields" });

/** Every schema the document names, under components.schemas. */
const schemas = {
  Json: JsonSchema,
  JsonObject,
  Error: ErrorBody,
  CreateSessionBody,
  StartRunBody,
  ContinueBody,
  ApprovalBody,
  ForkBody,
  SessionCreated,
  RunStarted,
  Continued: z.object({ continued: z.literal(true) }),
  ApprovalAnswered: z.object({ pauseId: z.string(), decision: z.enum(["approved", "rejected"]) }),
  Cancelled: z.object({ cancelled: z.literal(true) }),
  StreamTokenBody,
  StreamToken: z.object({
    token: z.string().meta({ description: "pass as ?token= on this run's event stream only" }),
    expiresMs: z.number().meta({ description: "when the token stops working, ms since the epoch" }),
    url: z.string().meta({ description: "the event stream's path with the token, for new EventSource(url)" }),
  }),
  Reloaded: z.object({ reloaded: z.literal(true), tenants: z.array(z.string()) }),
  SessionDeleted: z.object({
    deleted: z.literal(true),
    sessionId: z.string(),
    freedBytes: z.number().int().meta({ description: "bytes taken off the tenant's stored bytes (its store quota)" }),
  }),
  Health,
  SessionList,
  SessionView,
  RunView,
  ScriptList,
  ScriptVersions,
  ScriptVersion,
  Deployment,
  DeploymentHistory,
  ShadowReport,
  ReplayResult,
  RecordedCaseFile,
  ...eventSchemas,
  Event: EventSchema,
  TextDeltaEvent: TextDeltaEventSchema,
  StreamEvent: StreamEventSchema,
  UsageReport,
  ApprovalList,
  RunList,
  UploadBody,
  DeployBody,
  ReplayBody,
  VersionCreated: z.object({ name: z.string(), version: z.number(), bundleHash: z.string(), warnings: z.array(z.string()) }),
  Deployed: z.object({ deploymentId: z.string(), number: z.number(), rollbackOf: z.string().optional() }),
};
type Schema = keyof typeof schemas;

interface Operation {
  method: "get" | "post" | "put" | "delete";
  /** OpenAPI form: `{param}`. */
  path: string;
  summary: string;
  /** False for the few routes that answer without an API key; "admin" for the operator's (server.adminKeys). */
  auth?: boolean | "admin";
  body?: { schema: Schema; example: unknown; optional?: boolean };
  responses: Record<number, { description: string; schema?: Schema; eventStream?: boolean; text?: boolean }>;
  /** Extra parameters beyond the path's own. */
  parameters?: object[];
}

const errors = {
  400: "invalid body or parameter",
  401: "no or unknown API key (UNAUTHORIZED), or a reload removed the tenant while the request was in flight (TENANT_REMOVED)",
  403: "the tenant is over its store quota (STORE_QUOTA)",
  404: "unknown, or another tenant's",
  429: "rate limited, or too many streams, replays or uploads in progress",
  507: "the store's disk is full (STORE_FULL): nothing was written",
};
/**
 * Every route that reaches the store, a runtime or a file can run out of descriptors: 503 SERVER_BUSY is listed
 * on each of them (test/server/openapi.test.ts finds them), with DRAINING where `503` is asked for too.
 */
const serverBusy = "out of file descriptors for now (SERVER_BUSY); retry after Retry-After";
const errorResponses = (...codes: (keyof typeof errors | 409 | 413 | 503)[]) => ({
  503: { description: serverBusy, schema: "Error" as const },
  ...Object.fromEntries(
    codes.map((code) => [
      code,
      {
        description:
          code === 409
            ? "conflict (session busy, run not active)"
            : code === 413
              ? "body too large"
              : code === 503
                ? `the server is shutting down (DRAINING), its PostgreSQL store is out of reach (STORE_UNAVAILABLE), the tenant's scripts, host tools or models failed to load (TENANT_UNAVAILABLE), or ${serverBusy}`
                : errors[code],
        schema: "Error" as const,
      },
    ]),
  ),
});

export const operations: Operation[] = [
  {
    method: "get",
    path: "/healthz",
    summary: "Liveness",
    auth: false,
    responses: {
      200: { description: "up", schema: "Health" },
      503: {
        description:
          "STORE_UNAVAILABLE: this node cannot reach its PostgreSQL store, so it takes no runs (the health fields beside `error` say why)",
        schema: "Error",
      },
    },
  },
  {
    method: "get",
    path: "/v1/openapi.json",
    summary: "This document",
    auth: false,
    responses: { 200: { description: "the OpenAPI 3.1 document", schema: "JsonObject" } },
  },
  {
    method: "post",
    path: "/v1/sessions",
    summary: "Create a session (optionally with run defaults)",
    body: { schema: "CreateSessionBody", example: { defaults: { maxIterations: 10, tags: { channel: "web" } } }, optional: true },
    responses: { 201: { description: "created", schema: "SessionCreated" }, ...errorResponses(400, 401, 403, 413, 429, 507) },
  },
  {
    method: "get",
    path: "/v1/sessions",
    summary: "List the tenant's sessions, oldest first, a page at a time (follow nextCursor while there is one)",
    parameters: [
      {
        name: "limit",
        in: "query",
        required: false,
        description: "sessions per page (default 100, at most 1000)",
        schema: { type: "string", pattern: "^\\d{1,9}$" },
      },
      {
        name: "cursor",
        in: "query",
        required: false,
        description: "the previous page's nextCursor",
        schema: { type: "string" },
      },
    ],
    responses: { 200: { description: "the sessions", schema: "SessionList" }, ...errorResponses(400, 401, 429) },
  },
  {
    method: "get",
    path: "/v1/sessions/{sessionId}",
    summary: "A session with its turns",
    responses: { 200: { description: "the session", schema: "SessionView" }, ...errorResponses(401, 404, 429) },
  },
  {
    method: "post",
    path: "/v1/sessions/{sessionId}/runs",
    summary: "Start a run in the session",
    body: {
      schema: "StartRunBody",
      example: {
        prompt: "Please refund order A17",
        userContext: { userId: "u-42" },
        step: false,
        tags: { channel: "web" },
        maxIterations: 5,
        maxTokens: 50000,
        maxCostUsd: 0.5,
      },
    },
    parameters: [
      {
        name: "traceparent",
        in: "header",
        required: false,
        description: "W3C trace context: the run's trace continues the caller's (a malformed value is ignored)",
        schema: { type: "string" },
      },
    ],
    responses: { 202: { description: "started", schema: "RunStarted" }, ...errorResponses(400, 401, 403, 404, 409, 413, 429, 503, 507) },
  },
  {
    method: "post",
    path: "/v1/sessions/{sessionId}/resume",
    summary: "Resume the session's interrupted run",
    responses: { 202: { description: "resumed", schema: "RunStarted" }, ...errorResponses(401, 404, 409, 429, 503, 507) },
  },
  {
    method: "post",
    path: "/v1/sessions/{sessionId}/fork",
    summary: "Fork the session at a run (default: its last)",
    body: { schema: "ForkBody", example: {}, optional: true },
    responses: { 201: { description: "the new session", schema: "SessionCreated" }, ...errorResponses(400, 401, 403, 404, 413, 429, 507) },
  },
  {
    method: "get",
    path: "/v1/runs/{runId}",
    summary: "A run's record and open pauses",
    responses: { 200: { description: "the run", schema: "RunView" }, ...errorResponses(401, 404, 429) },
  },
  {
    method: "get",
    path: "/v1/runs/{runId}/events",
    summary: "The run's events as Server-Sent Events (id = seq); ends after run-finished",
    parameters: [
      {
        name: "Last-Event-ID",
        in: "header",
        required: false,
        description: "resume after this seq",
        schema: { type: "string", pattern: "^\\d{1,15}$" },
      },
      {
        name: "after",
        in: "query",
        required: false,
        description: "same as Last-Event-ID",
        schema: { type: "string", pattern: "^\\d{1,15}$" },
      },
    ],
    responses: {
      200: { description: "event stream", eventStream: true },
      204: { description: "the run has finished and no event follows Last-Event-ID (an EventSource stops reconnecting)" },
      ...errorResponses(400, 401, 404, 429),
    },
  },
  {
    method: "post",
    path: "/v1/runs/{runId}/stream-token",
    summary: "A short-lived token that reads this run's event stream as ?token= (for a browser's EventSource, which sends no headers)",
    body: { schema: "StreamTokenBody", example: { ttlMs: 60000 }, optional: true },
    responses: { 201: { description: "the token", schema: "StreamToken" }, ...errorResponses(400, 401, 404, 429) },
  },
  {
    method: "post",
    path: "/v1/runs/{runId}/continue",
    summary: "Continue a step pause",
    body: { schema: "ContinueBody", example: { pauseId: "pause_AAAAAAAAAAAAAAAAAAAAAA" } },
    responses: { 200: { description: "continued", schema: "Continued" }, ...errorResponses(400, 401, 404, 429) },
  },
  {
    method: "post",
    path: "/v1/runs/{runId}/approvals/{pauseId}",
    summary: "Answer an open approval (approve, perhaps with edited arguments, or reject)",
    body: { schema: "ApprovalBody", example: { decision: "approve" } },
    responses: { 200: { description: "answered", schema: "ApprovalAnswered" }, ...errorResponses(400, 401, 404, 429) },
  },
  {
    method: "post",
    path: "/v1/runs/{runId}/cancel",
    summary: "Cancel a running run",
    responses: { 200: { description: "cancelled", schema: "Cancelled" }, ...errorResponses(401, 404, 409, 429) },
  },
  {
    method: "get",
    path: "/v1/usage",
    summary: "The tenant's usage totals since a time: runs, inferences, tokens, cost, tool calls, sandbox CPU",
    parameters: [
      {
        name: "since",
        in: "query",
        required: false,
        description: "ISO 8601 time (default: all time)",
        schema: { type: "string", examples: ["2026-11-01T00:00:00Z"] },
      },
    ],
    responses: { 200: { description: "the totals", schema: "UsageReport" }, ...errorResponses(400, 401, 429) },
  },
  {
    method: "get",
    path: "/v1/approvals",
    summary: "Every open approval of the tenant, across its runs, oldest first (tool, arguments, the hook's reason, deadline)",
    responses: { 200: { description: "the open approvals", schema: "ApprovalList" }, ...errorResponses(401, 429) },
  },
  {
    method: "get",
    path: "/v1/runs",
    summary: "The tenant's runs, latest first, filtered by session, status and start time, a page at a time",
    parameters: [
      { name: "sessionId", in: "query", required: false, description: "runs of this session only", schema: { type: "string" } },
      {
        name: "status",
        in: "query",
        required: false,
        description: "runs in this status only",
        schema: { type: "string", enum: ["running", "completed", "failed", "aborted", "cancelled", "interrupted"] },
      },
      {
        name: "since",
        in: "query",
        required: false,
        description: "runs started at or after this ISO 8601 time",
        schema: { type: "string", examples: ["2026-11-01T00:00:00Z"] },
      },
      {
        name: "before",
        in: "query",
        required: false,
        description: "runs started before this run (the previous page's `next`)",
        schema: { type: "string" },
      },
      {
        name: "limit",
        in: "query",
        required: false,
        description: "runs per page, 1-200 (default 50)",
        schema: { type: "string", pattern: "^\\d{1,3}$" },
      },
    ],
    responses: { 200: { description: "a page of runs", schema: "RunList" }, ...errorResponses(400, 401, 429) },
  },
  ...policyOperations(),
  {
    method: "get",
    path: "/metrics",
    summary: "Prometheus metrics (text format 0.0.4): runs, latencies, sandbox restarts and quarantines, store bytes, open streams",
    auth: "admin",
    responses: {
      200: { description: "the metrics", text: true },
      401: { description: "no operator key", schema: "Error" },
      503: { description: serverBusy, schema: "Error" },
    },
  },
  {
    method: "post",
    path: "/v1/admin/reload",
    summary: "Re-read the config file (as SIGHUP does); a refused config leaves the old one serving",
    auth: "admin",
    responses: {
      200: { description: "the new config serves", schema: "Reloaded" },
      400: { description: "the new config was refused (CONFIG); the old one stays", schema: "Error" },
      401: { description: "no operator key", schema: "Error" },
      503: {
        description: "the server is out of file descriptors (SERVER_BUSY): the config was not read; the old one stays",
        schema: "Error",
      },
    },
  },
  {
    method: "delete",
    path: "/v1/sessions/{sessionId}",
    summary: "Delete a session with its runs, events and snapshots, freeing its store quota (its usage stays billed)",
    responses: {
      200: { description: "deleted", schema: "SessionDeleted" },
      ...errorResponses(401, 404, 429),
      409: { description: "a run of it is in flight (SESSION_BUSY), or a fork keeps its history in it (SESSION_FORKED)", schema: "Error" },
    },
  },
];

/** The policy lifecycle routes (src/server/policy-routes.ts, docs/policy-lifecycle.md), in an order a client can follow. */
function policyOperations(): Operation[] {
  const ref = { name: "refund-policy", version: 1 };
  return [
    {
      method: "post",
      path: "/v1/scripts",
      summary: "Upload a script version: bundled from its files only, type-checked, loaded in a throwaway sandbox",
      body: {
        schema: "UploadBody",
        example: {
          name: "refund-policy",
          entry: "policy.ts",
          files: { "policy.ts": 'import { defineScript } from "hookbox";\nexport default defineScript({ hooks: {} });\n' },
        },
      },
      responses: {
        201: { description: "stored", schema: "VersionCreated" },
        ...errorResponses(400, 401, 403, 413, 429, 507),
      },
    },
    {
      method: "get",
      path: "/v1/scripts",
      summary: "The tenant's scripts by name, each with its latest version (`{scripts: [{name, latestVersion, createdMs}]}`)",
      responses: { 200: { description: "the scripts", schema: "ScriptList" }, ...errorResponses(401, 429) },
    },
    {
      method: "get",
      path: "/v1/scripts/{name}",
      summary: "A script's versions",
      responses: { 200: { description: "the versions", schema: "ScriptVersions" }, ...errorResponses(401, 404, 429) },
    },
    {
      method: "get",
      path: "/v1/scripts/{name}/versions/{version}",
      summary: "One version with its files",
      responses: { 200: { description: "the version", schema: "ScriptVersion" }, ...errorResponses(401, 404, 429) },
    },
    {
      method: "put",
      path: "/v1/deployment",
      summary: "Deploy script versions (and shadow candidates); new runs use it at once",
      body: { schema: "DeployBody", example: { scripts: [ref], shadow: [] } },
      responses: { 200: { description: "deployed", schema: "Deployed" }, ...errorResponses(400, 401, 413, 429, 507) },
    },
    {
      method: "get",
      path: "/v1/deployment",
      summary: "The current deployment",
      responses: { 200: { description: "the deployment", schema: "Deployment" }, ...errorResponses(401, 429) },
    },
    {
      method: "get",
      path: "/v1/deployments",
      summary: "The deployment history, oldest first",
      responses: { 200: { description: "the history", schema: "DeploymentHistory" }, ...errorResponses(401, 429) },
    },
    {
      method: "post",
      path: "/v1/deployment/rollback",
      summary: "Make the deployment the current one replaced current again",
      responses: { 200: { description: "rolled back", schema: "Deployed" }, ...errorResponses(401, 409, 429, 507) },
    },
    {
      method: "get",
      path: "/v1/deployments/{id}/shadow-report",
      summary: "Shadow verdicts beside the active ones over the deployment's runs",
      responses: { 200: { description: "the report", schema: "ShadowReport" }, ...errorResponses(401, 404, 429) },
    },
    {
      method: "get",
      path: "/v1/sessions/{sessionId}/cases",
      summary:
        "The session's recorded hook calls as a case file for hookbox test (one case per run); hookbox-recorded-truncated: true when bounds left some out",
      parameters: [
        {
          name: "script",
          in: "query",
          required: false,
          description:
            "the script file the cases run, as the case file will name it (repeat for a stack); absent: the script beside the file",
          schema: { type: "string" },
        },
        {
          name: "runId",
          in: "query",
          required: false,
          description: "only this run of the session (repeatable)",
          schema: { type: "string" },
        },
      ],
      responses: { 200: { description: "the case file", schema: "RecordedCaseFile" }, ...errorResponses(400, 401, 404, 429) },
    },
    {
      method: "post",
      path: "/v1/replays",
      summary: "Re-evaluate script versions against the tenant's recorded hook calls (no model, no tool)",
      body: { schema: "ReplayBody", example: { scripts: [ref] } },
      responses: { 200: { description: "changed calls and a summary", schema: "ReplayResult" }, ...errorResponses(400, 401, 413, 429) },
    },
  ];
}

const ref = (name: Schema) => ({ $ref: `#/components/schemas/${name}` });

/** Every route with a JSON body refuses another content type before reading it. */
const unsupportedMediaType = { description: "the body is not JSON (UNSUPPORTED_MEDIA_TYPE)", schema: "Error" as const };
const bodyTooLarge = { description: "body too large (BODY_TOO_LARGE: over the server's maxBodyBytes)", schema: "Error" as const };
/** Any route can fail on a server fault; never on bad input. */
const serverFault = {
  description:
    "a server fault (INTERNAL: a bug, or the code of the host error), with a reference the operator's log has the details under; never bad input",
  schema: "Error" as const,
};

/**
 * A run's event stream. OpenAPI 3.1 has no way to type the messages of a stream (3.2's itemSchema), so the body is a
 * string whose decoded content JSON Schema's contentSchema describes: each message's `data:` is one StreamEvent.
 */
const eventStreamSchema = {
  type: "string",
  contentMediaType: "text/event-stream",
  description:
    "Server-Sent Events. A stored event is `id: <seq>` then `data: <the event as JSON>`; a text-delta has no id. `data:` is one StreamEvent (components.schemas.StreamEvent), told apart by `type`. `: keep-alive` comments come every 15 s; the stream ends after run-finished.",
  contentSchema: ref("StreamEvent"),
};

/** components.schemas: zod's JSON Schema for each named schema, referring to the others by $ref. */
function componentSchemas(): Record<string, object> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const { schemas: converted } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io: "input",
    uri: (id) => `#/components/schemas/${id}`,
  });
  // Each becomes a schema object inside the document: no dialect or id of its own.
  const out: Record<string, object> = Object.fromEntries(
    Object.entries(converted).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema]),
  );
  // The event union names the property that tells its members apart, for generators that build tagged unions.
  const mapping = Object.fromEntries(
    Object.entries(eventSchemas).map(([id, schema]) => [schema.shape.type.value, `#/components/schemas/${id}`]),
  );
  out.Event = { ...out.Event, discriminator: { propertyName: "type", mapping } };
  // Any JSON value. zod writes it as a schema that refers to itself, which generators turn into a type that refers
  // to itself through the components (openapi-typescript: "'Json' is referenced directly or indirectly in its own
  // type annotation"); an empty schema says the same to a validator and is `unknown` to a generator.
  out.Json = { description: "any JSON value" };
  return out;
}

const pathParameters = (path: string) =>
  [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({ name, in: "path", required: true, schema: { type: "string" } }));

/** Builds the document (once per server: it depends only on the code). */
export function openApiDocument(version = packageVersion()): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const op of operations) {
    const answers: Operation["responses"] = { ...op.responses, 500: serverFault };
    if (op.body) answers[415] = unsupportedMediaType;
    // The body's size is checked on every tenant route (app.ts), whether the route reads a body or not.
    if (op.path.startsWith("/v1/") && op.auth === undefined) answers[413] ??= bodyTooLarge;
    const responses = Object.fromEntries(
      Object.entries(answers).map(([code, response]) => [
        code,
        {
          description: response.description,
          ...(response.eventStream
            ? { content: { "text/event-stream": { schema: eventStreamSchema } } }
            : response.text
              ? { content: { "text/plain": { schema: { type: "string" } } } }
              : response.schema
                ? { content: { "application/json": { schema: ref(response.schema) } } }
                : {}),
        },
      ]),
    );
    (paths[op.path] ??= {})[op.method] = {
      summary: op.summary,
      operationId: `${op.method}${op.path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase())}`,
      ...(op.auth === false ? { security: [] } : op.auth === "admin" ? { security: [{ operatorBearer: [] }] } : {}),
      parameters: [...pathParameters(op.path), ...(op.parameters ?? [])],
      ...(op.body
        ? {
            requestBody: {
              required: !op.body.optional,
              content: { "application/json": { schema: ref(op.body.schema), example: op.body.example } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "hookbox server", version, description: "Sessions, runs and their event streams. See docs/http-api.md." },
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "a tenant's API key" },
        apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
        operatorBearer: { type: "http", scheme: "bearer", description: "an operator key (server.adminKeys)" },
      },
    },
    security: [{ bearer: [] }, { apiKey: [] }],
    paths,
  };
}
