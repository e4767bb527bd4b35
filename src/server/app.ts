import { Hono, type Context } from "hono";
import type { SessionManager } from "../session/manager.js";
import type { RunOptions } from "../host/types.js";
import type { ServerConfig } from "./config.js";
import { sha256Hex } from "./config.js";
import { ApiError, errorResponse } from "./api-error.js";
import { bodyLimit } from "./request-body.js";
import { presentedKey, requestHeader } from "./request-headers.js";
import { ContinueBody, CreateSessionBody, ForkBody, StartRunBody, StreamTokenBody, readBody } from "./bodies.js";
import type { TokenBucket } from "./rate-limit.js";
import { LiveConfig } from "./live-config.js";
import { registerAdminRoutes, type AdminServices } from "./admin-routes.js";
import type { MetricGauges } from "./metrics.js";
import { DEFAULT_STREAM_TOKEN_TTL_MS, StreamTokens } from "./stream-token.js";
import { corsFor } from "./cors.js";
import { DEFAULT_SESSIONS_PAGE, MAX_SESSIONS_PAGE, readSessionCursor, sessionCursor } from "./session-cursor.js";
import { streamRunEvents } from "./sse.js";
import { TenantSlots } from "./tenant-slots.js";
import { EventReplayBudget } from "./event-replay-budget.js";
import { registerListRoutes } from "./list-routes.js";
import { registerUsageRoute } from "./usage-route.js";
import { parseTraceparent } from "../telemetry/run-trace.js";
import { registerPolicyRoutes, type PolicyServices } from "./policy-routes.js";
import { registerCaseRoutes } from "./case-routes.js";
import { openApiDocument } from "./openapi.js";
import { approvalRoute } from "./approval-route.js";
import { refuseAboveLimits } from "./tenant-ceilings.js";
import { textSlices } from "../session/one-per-tick.js";
import { redactToolErrors, type Redactor } from "./redact.js";
import { sendControl } from "./run-controls.js";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ClusterStore, ControlReply, RunControl } from "../store/cluster.js";
import type { RunRecord } from "../store/types.js";
import type { TenantsStatus } from "./lazy-runtimes.js";

type Env = { Variables: { tenant: string } };

export interface AppOptions {
  config: ServerConfig;
  /** The configuration a reload replaces (default: `config`, never reloaded). */
  live?: LiveConfig;
  /** GET /metrics and POST /v1/admin/reload (src/server/admin-routes.ts); absent: not served. */
  admin?: Omit<AdminServices, "live" | "gauges"> & { gauges: Omit<MetricGauges, "openStreams"> };
  manager: SessionManager;
  /** True once SIGTERM arrived: no new runs. */
  draining(): boolean;
  /** How many tenants are ready, being built, failed (tenants built on first use); shown on /healthz. */
  tenantsStatus?(): TenantsStatus | undefined;
  /** Takes host paths out of every text a tenant sees (default: none taken out). */
  redact?: Redactor;
  /** Script versions, deployments, shadow report and replays (src/server/policy-routes.ts). */
  policy?: Omit<PolicyServices, "served">;
  /** The store's cluster side (a PostgreSQL store): controls reach runs on other nodes, /healthz reports the database. */
  cluster?: ClusterStore;
}

/**
 * The HTTP API of docs/http-api.md (described to clients by openapi.ts). A key sees only its own tenant: another tenant's session,
 * run or pause answers 404, exactly as an unknown one does, so ids cannot be probed.
 */
export function createApp({
  config,
  live = new LiveConfig(config),
  manager,
  draining,
  tenantsStatus,
  redact = (text) => text,
  policy,
  admin,
  cluster,
}: AppOptions): Hono<Env> {
  const app = new Hono<Env>();
  const tenants = live.tenants;
  const streams = new TenantSlots("TOO_MANY_STREAMS", "event streams open", "close one first");
  const replayed = new EventReplayBudget();
  // On a shared (PostgreSQL) store a tenant's rates hold across every node: one bucket row per tenant and kind.
  const shared = (kind: string, tenant: string, perMinute: number) =>
    cluster && { take: () => cluster.takeToken(`${kind}:${tenant}`, perMinute) };
  const streamTokens = new StreamTokens();

  app.onError((error, c) => errorResponse(c, error, redact));
  app.notFound((c) => errorResponse(c, new ApiError(404, "NOT_FOUND", `no route ${c.req.method} ${c.req.path}`), redact));
  // First, so a browser's preflight (OPTIONS, no key) is answered before any key check.
  app.use("*", corsFor(live));

  app.get("/healthz", (c) => {
    // On a shared (PostgreSQL) store: this node's name, and whether it reaches the database (it takes no runs when not).
    const store = cluster?.health();
    const health = {
      ok: store?.ok ?? true,
      draining: draining(),
      liveRuns: manager.liveRunCount,
      ...(tenantsStatus ? { tenants: tenantsStatus() } : {}),
      ...(cluster
        ? { node: cluster.node, store: store!.ok ? { reachable: true } : { reachable: false, reason: redact(store!.reason) } }
        : {}),
    };
    if (store && !store.ok)
      return c.json(
        { error: { code: "STORE_UNAVAILABLE", message: "this node cannot reach the database, so it takes no runs" }, ...health },
        503,
      );
    return c.json(health);
  });
  // The API's description is public (no key), like /healthz: registered before the key check.
  const openapi = openApiDocument();
  app.get("/v1/openapi.json", (c) => c.json(openapi));

  if (admin) registerAdminRoutes(app, { ...admin, live, gauges: { ...admin.gauges, openStreams: () => streams.taken() } });

  app.use("/v1/*", async (c, next) => {
    if (c.req.path.startsWith("/v1/admin/")) return next(); // the operator's keys, checked by admin-routes.ts
    const key = presentedKey(c);
    const tenant = key ? live.current.keys.get(sha256Hex(key)) : streamTokenTenant(c, streamTokens);
    if (!key && tenant === undefined) throw new ApiError(401, "UNAUTHORIZED", "missing API key: send Authorization: Bearer <key>");
    if (tenant === undefined || !tenants.has(tenant)) throw new ApiError(401, "UNAUTHORIZED", "unknown API key");
    const { requestsPerMinute } = live.served(tenant);
    await limit(
      shared("requests", tenant, requestsPerMinute) ?? live.requestBucket(tenant),
      `tenant ${tenant} exceeded ${requestsPerMinute} requests per minute`,
    );
    c.set("tenant", tenant);
    await next();
  });
  app.use("/v1/*", bodyLimit(config.maxBodyBytes));

  const ownedSession = async (c: Context<Env>, sessionId: string) => {
    const session = await manager.get(sessionId);
    if (!session || session.tenant !== c.get("tenant")) throw new ApiError(404, "NOT_FOUND", `no session ${sessionId}`);
    return session;
  };
  // Read from the store, the run and its session both: a remembered record could be of a session deleted and
  // made again under the same id by another process sharing the store.
  const ownedRun = async (c: Context<Env>, runId: string) => {
    const run = await manager.store.getRun(runId);
    const session = run && (await manager.store.getSession(run.sessionId));
    if (!run || session?.tenant !== c.get("tenant")) throw new ApiError(404, "NOT_FOUND", `no run ${runId}`);
    return run;
  };
  // What the events route needs of a run. One this process is executing, and whose end it has not handed to the
  // store, is answered from what it recorded at the run's start, with no store read (and no commit that read
  // would make first): SessionManager.runningTenant says why that run and its session still exist and are its
  // tenant's. Another tenant gets the same 404 as for a missing run; any other run is read from the store.
  const streamedRun = async (c: Context<Env>, runId: string): Promise<Pick<RunRecord, "id" | "status" | "lastSeq">> => {
    const tenant = manager.runningTenant(runId);
    if (tenant === undefined) return ownedRun(c, runId);
    if (tenant !== c.get("tenant")) throw new ApiError(404, "NOT_FOUND", `no run ${runId}`);
    return { id: runId, status: "running", lastSeq: 0 };
  };
  const admitRun = async (tenant: string) => {
    if (draining())
      throw new ApiError(503, "DRAINING", "the server is shutting down and accepts no new runs", undefined, { "retry-after": "5" });
    const store = cluster?.health();
    if (store && !store.ok)
      throw new ApiError(
        503,
        "STORE_UNAVAILABLE",
        `this node cannot reach the database, so it starts no runs: ${store.reason}`,
        undefined,
        {
          "retry-after": "5",
        },
      );
    const { runsPerMinute } = live.served(tenant);
    await limit(
      shared("runs", tenant, runsPerMinute) ?? live.runBucket(tenant),
      `tenant ${tenant} exceeded ${runsPerMinute} runs per minute`,
    );
  };

  app.post("/v1/sessions", async (c) => {
    const body = await readBody(c, CreateSessionBody, { emptyAs: {} });
    const tenant = live.served(c.get("tenant"));
    refuseAboveLimits(tenant, body.defaults ?? {}, "$.defaults");
    const session = await manager.create({
      tenant: tenant.config.name,
      tenantConfig: tenant.config,
      defaults: (body.defaults ?? {}) as RunOptions,
    });
    return c.json({ sessionId: session.id }, 201);
  });

  app.get("/v1/sessions", async (c) => {
    const limit = Math.min(queryCount(c, "limit") ?? DEFAULT_SESSIONS_PAGE, MAX_SESSIONS_PAGE);
    const cursor = c.req.query("cursor");
    const after = cursor === undefined ? undefined : readSessionCursor(cursor);
    const sessions = await manager.list({ tenant: c.get("tenant"), limit: limit + 1, ...(after ? { after } : {}) });
    const page = sessions.slice(0, limit);
    const last = page.at(-1);
    return c.json({
      sessions: page,
      ...(sessions.length > limit && last ? { nextCursor: sessionCursor({ createdMs: last.createdMs, id: last.id }) } : {}),
    });
  });

  app.get("/v1/sessions/:sessionId", async (c) => {
    const session = await ownedSession(c, c.req.param("sessionId"));
    const page = { offset: queryCount(c, "offset"), limit: queryCount(c, "limit") };
    c.header("content-type", "application/json; charset=UTF-8");
    return c.body(textSlices(redactToolErrors((await manager.describeJson(session.id, page))!, redact)));
  });

  app.delete("/v1/sessions/:sessionId", async (c) => {
    const session = await ownedSession(c, c.req.param("sessionId"));
    const { sessionId, freedBytes } = await manager.delete(session.id);
    return c.json({ deleted: true, sessionId, freedBytes });
  });

  app.post("/v1/sessions/:sessionId/runs", async (c) => {
    // A remembered record: a session deleted by another process since (or made again under the same id for
    // another tenant) is refused by startRunOf's store write, which checks the session is still this tenant's.
    const sessionId = c.req.param("sessionId");
    const session = await manager.getRemembered(sessionId);
    if (!session || session.tenant !== c.get("tenant")) throw new ApiError(404, "NOT_FOUND", `no session ${sessionId}`);
    const body = await readBody(c, StartRunBody);
    refuseAboveLimits(live.served(session.tenant), body);
    await admitRun(session.tenant);
    const { prompt, ...options } = body;
    // A malformed traceparent is ignored, as W3C Trace Context asks: the run starts a trace of its own.
    const traceparent = requestHeader(c, "traceparent");
    const traced = traceparent && parseTraceparent(traceparent) ? { traceparent: traceparent.trim() } : {};
    const runOptions: RunOptions = { ...(options as RunOptions), ...traced };
    // The record that was checked for its tenant just now: the run starts from it, not from a second read.
    const handle = await manager.startRunOf(session, prompt, runOptions);
    return c.json({ runId: handle.runId, inferenceId: handle.inferenceId }, 202);
  });

  app.post("/v1/sessions/:sessionId/resume", async (c) => {
    const session = await ownedSession(c, c.req.param("sessionId"));
    await admitRun(session.tenant);
    const handle = await session.resume();
    return c.json({ runId: handle.runId, inferenceId: handle.inferenceId }, 202);
  });

  app.post("/v1/sessions/:sessionId/fork", async (c) => {
    const session = await ownedSession(c, c.req.param("sessionId"));
    const body = await readBody(c, ForkBody, { emptyAs: {} });
    const fork = await session.fork(body.runId ? { runId: body.runId } : {});
    return c.json({ sessionId: fork.id }, 201);
  });

  app.get("/v1/runs/:runId", async (c) => {
    const run = await ownedRun(c, c.req.param("runId"));
    const { ownerPid: _owner, ownerInstance: _instance, ...visible } = run;
    if (visible.reason !== undefined) visible.reason = redact(visible.reason);
    return c.json({ ...visible, pauses: await manager.store.openPauses(run.id) });
  });

  app.get("/v1/runs/:runId/events", async (c) => {
    const run = await streamedRun(c, c.req.param("runId"));
    const raw = requestHeader(c, "last-event-id") ?? c.req.query("after") ?? "0";
    if (!/^\d{1,15}$/.test(raw.trim()))
      throw new ApiError(
        400,
        "VALIDATION",
        `Last-Event-ID must be an event seq (a non-negative integer), got "${raw.slice(0, 40)}"`,
        "Last-Event-ID",
      );
    // Nothing more will come (an EventSource reconnecting after run-finished): 204 stops its reconnects. An
    // interrupted run may be resumed and go on, so its reader is not told to stop.
    if (run.status !== "running" && run.status !== "interrupted" && Number(raw.trim()) >= run.lastSeq) return c.body(null, 204);
    const tenant = live.served(c.get("tenant"));
    const release = streams.take(tenant.config.name, tenant.maxEventStreams);
    return streamRunEvents(c, {
      manager,
      runId: run.id,
      afterSeq: Number(raw.trim()),
      redact,
      onClose: release,
      pace: (chars, signal) => replayed.charge(tenant.config.name, tenant.eventReplayBytesPerMinute, chars, signal),
    });
  });

  // Continue, approve and cancel reach the run wherever it executes: here, or its owner node (run-controls.ts).
  const control = async (request: RunControl): Promise<Extract<ControlReply, { ok: true }> | undefined> => {
    const reply = await sendControl(manager, cluster, request);
    if (reply && !reply.ok) throw new ApiError(reply.status as ContentfulStatusCode, reply.code, reply.message, reply.path);
    return reply;
  };

  app.post("/v1/runs/:runId/continue", async (c) => {
    const run = await ownedRun(c, c.req.param("runId"));
    const { pauseId } = await readBody(c, ContinueBody);
    // A pause id is bound to its run: another run's pause (or a stale one) is unknown here.
    if (!(await control({ kind: "continue", runId: run.id, pauseId })))
      throw new ApiError(404, "NOT_FOUND", `run ${run.id} has no open pause ${pauseId}`, "$.pauseId");
    return c.json({ continued: true });
  });

  app.post("/v1/runs/:runId/stream-token", async (c) => {
    const run = await ownedRun(c, c.req.param("runId"));
    const body = await readBody(c, StreamTokenBody, { emptyAs: {} });
    const { token, expiresMs } = streamTokens.issue(run.id, c.get("tenant"), body.ttlMs ?? DEFAULT_STREAM_TOKEN_TTL_MS);
    return c.json({ token, expiresMs, url: `/v1/runs/${run.id}/events?token=${token}` }, 201);
  });

  approvalRoute(app, { ownedRun, control });

  app.post("/v1/runs/:runId/cancel", async (c) => {
    const run = await ownedRun(c, c.req.param("runId"));
    if (!(await control({ kind: "cancel", runId: run.id, reason: "cancelled over HTTP" })))
      throw new ApiError(409, "RUN_NOT_ACTIVE", `run ${run.id} is ${run.status}, not running`);
    return c.json({ cancelled: true });
  });

  registerUsageRoute(app, manager);
  registerListRoutes(app, { manager, redact });
  registerPolicyRoutes(app, policy && { ...policy, served: (tenant) => live.served(tenant) });
  registerCaseRoutes(app, { store: manager.store, redact });

  return app;
}

/** A non-negative integer query parameter, or undefined when absent. */
function queryCount(c: Context<Env>, name: string): number | undefined {
  const raw = c.req.query(name);
  if (raw === undefined) return undefined;
  if (!/^\d{1,9}$/.test(raw))
    throw new ApiError(400, "VALIDATION", `?${name} must be a non-negative integer, got "${raw.slice(0, 40)}"`, name);
  return Number(raw);
}

async function limit(bucket: Pick<TokenBucket, "take"> | { take(): Promise<number> }, message: string): Promise<void> {
  const waitMs = await bucket.take();
  if (waitMs > 0) throw new ApiError(429, "RATE_LIMITED", message, undefined, { "retry-after": String(Math.ceil(waitMs / 1000)) });
}

/** `?token=` on a run's event stream: the tenant of a valid stream token for that run (never logged, never echoed). */
function streamTokenTenant(c: Context<Env>, tokens: StreamTokens): string | undefined {
  const token = c.req.query("token");
  const match = /^\/v1\/runs\/([^/]+)\/events$/.exec(c.req.path);
  if (token === undefined || !match || c.req.method !== "GET") return undefined;
  const tenant = tokens.verify(token, match[1]);
  if (tenant === undefined) throw new ApiError(401, "UNAUTHORIZED", "the stream token is invalid, expired or for another run");
  return tenant;
}
