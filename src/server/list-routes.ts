import type { Context, Hono } from "hono";
import { z } from "zod";
import type { SessionManager } from "../session/manager.js";
import type { RunRecord, StoredRunStatus } from "../store/types.js";
import { parseSince } from "../contracts/since.js";
import { JsonSchema } from "../turns/json.js";
import { ApiError } from "./api-error.js";
import type { Redactor } from "./redact.js";

type Env = { Variables: { tenant: string } };

const RUN_STATUSES = ["running", "completed", "failed", "aborted", "cancelled", "interrupted"] as const;
const DEFAULT_RUNS_PAGE = 50;
const MAX_RUNS_PAGE = 200;

/** One open approval as GET /v1/approvals lists it (the OpenAPI document names this schema). */
export const OpenApprovalItem = z.object({
  pauseId: z.string(),
  runId: z.string(),
  sessionId: z.string(),
  callId: z.string(),
  name: z.string().meta({ description: "the tool the call is for" }),
  args: z.record(z.string(), JsonSchema).meta({ description: "the arguments the approval is asked for" }),
  reason: z.string().meta({ description: "the hook's reason for asking" }),
  script: z.string().meta({ description: "the script whose hook asked" }),
  deadlineMs: z.number().meta({ description: "epoch ms after which the approval counts as a rejection" }),
  openedMs: z.number(),
});
export const ApprovalList = z.object({ approvals: z.array(OpenApprovalItem).meta({ description: "oldest first" }) });

export const RunListItem = z.object({
  runId: z.string(),
  sessionId: z.string(),
  status: z.enum(RUN_STATUSES),
  prompt: z.string(),
  startedMs: z.number(),
  finishedMs: z.number().optional(),
  iterations: z.number().int(),
  reason: z.string().optional(),
  errorCode: z.string().optional(),
});
export const RunList = z.object({
  runs: z.array(RunListItem).meta({ description: "latest first" }),
  next: z.string().optional().meta({ description: "when more runs match: pass it as ?before= for the next page" }),
});

/**
 * Lists across a tenant's runs, for clients that watch the tenant rather than one run (the web inspector, an
 * operator's script): `GET /v1/approvals` (every open approval, oldest first) and `GET /v1/runs` (runs,
 * latest first, filtered by session, status and start time, a page at a time).
 */
export function registerListRoutes(app: Hono<Env>, { manager, redact }: { manager: SessionManager; redact: Redactor }): void {
  app.get("/v1/approvals", async (c) => {
    const pauses = await manager.store.listTenantPauses(c.get("tenant"));
    const approvals = pauses.flatMap((pause): z.infer<typeof OpenApprovalItem>[] => {
      // An approval's pending entry is its one call, with the hook's reason and script (store/pause-events.ts).
      const call = (pause.phase === "approval" && Array.isArray(pause.pendingToolCalls) && pause.pendingToolCalls[0]) as
        { id: string; name: string; args: Record<string, z.infer<typeof JsonSchema>>; reason?: string; script?: string } | false;
      if (!call) return [];
      return [
        {
          pauseId: pause.pauseId,
          runId: pause.runId,
          sessionId: pause.sessionId,
          callId: call.id,
          name: call.name,
          args: call.args,
          reason: call.reason ?? "",
          script: call.script ?? "",
          deadlineMs: pause.deadlineMs,
          openedMs: pause.openedMs,
        },
      ];
    });
    return c.json({ approvals });
  });

  app.get("/v1/runs", async (c) => {
    const tenant = c.get("tenant");
    const query = runQuery(c);
    if (query.beforeRunId !== undefined) {
      const before = await manager.store.getRun(query.beforeRunId);
      const owner = before && (await manager.store.getSession(before.sessionId));
      if (owner?.tenant !== tenant)
        throw new ApiError(400, "VALIDATION", `?before names no run of this tenant: ${query.beforeRunId}`, "before");
    }
    // One more than the page says whether there is a next one.
    const runs = await manager.store.listTenantRuns({ ...query, tenant, limit: query.limit + 1 });
    const page = runs.slice(0, query.limit).map((run) => runItem(run, redact));
    return c.json({ runs: page, ...(runs.length > query.limit ? { next: page.at(-1)!.runId } : {}) });
  });
}

function runQuery(c: Context<Env>) {
  const sessionId = c.req.query("sessionId");
  const status = c.req.query("status");
  const since = c.req.query("since");
  const before = c.req.query("before");
  const limit = c.req.query("limit");
  if (status !== undefined && !(RUN_STATUSES as readonly string[]).includes(status))
    throw new ApiError(400, "VALIDATION", `?status must be one of ${RUN_STATUSES.join(", ")}, got "${status.slice(0, 40)}"`, "status");
  let sinceMs: number | undefined;
  if (since !== undefined) {
    const parsed = parseSince(since);
    if ("problem" in parsed) throw new ApiError(400, "VALIDATION", `since: ${parsed.problem}`, "since");
    sinceMs = parsed.ms;
  }
  if (limit !== undefined && (!/^\d{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_RUNS_PAGE))
    throw new ApiError(400, "VALIDATION", `?limit must be an integer from 1 to ${MAX_RUNS_PAGE}, got "${limit.slice(0, 40)}"`, "limit");
  return {
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(status !== undefined ? { status: status as StoredRunStatus } : {}),
    ...(sinceMs !== undefined ? { sinceMs } : {}),
    ...(before !== undefined ? { beforeRunId: before } : {}),
    limit: limit === undefined ? DEFAULT_RUNS_PAGE : Number(limit),
  };
}

/** A run's reason may name host paths (a host fault's message): redacted as GET /v1/runs/:id does. */
function runItem(run: RunRecord, redact: Redactor): z.infer<typeof RunListItem> {
  return {
    runId: run.id,
    sessionId: run.sessionId,
    status: run.status,
    prompt: run.prompt,
    startedMs: run.startedMs,
    ...(run.finishedMs !== undefined ? { finishedMs: run.finishedMs } : {}),
    iterations: run.iterations,
    ...(run.reason !== undefined ? { reason: redact(run.reason) } : {}),
    ...(run.errorCode !== undefined ? { errorCode: run.errorCode } : {}),
  };
}
