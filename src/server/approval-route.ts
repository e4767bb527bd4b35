import type { Context, Hono } from "hono";
import type { ControlReply, RunControl } from "../store/cluster.js";
import type { RunRecord } from "../store/types.js";
import { ApiError } from "./api-error.js";
import { ApprovalBody, readBody } from "./bodies.js";

/**
 * `POST /v1/runs/:runId/approvals/:pauseId` `{decision: "approve" | "reject", args?, reason?}`: answers one of
 * the run's open approvals, wherever the run executes (this process or, on a shared store, its owner node).
 * 404 when the id is not an open approval of this run (another run's, a closed one, a run not running);
 * 400 naming the field when edited `args` break the tool's schema, and the approval stays open for a corrected
 * answer.
 */
type Env = { Variables: { tenant: string } };

export function approvalRoute(
  app: Hono<Env>,
  options: {
    ownedRun(c: Context<Env>, runId: string): Promise<RunRecord>;
    /** Applies a control where the run executes; undefined when no process runs it; refusals are thrown. */
    control(request: RunControl): Promise<Extract<ControlReply, { ok: true }> | undefined>;
  },
): void {
  app.post("/v1/runs/:runId/approvals/:pauseId", async (c) => {
    const run = await options.ownedRun(c, c.req.param("runId"));
    const pauseId = c.req.param("pauseId");
    const body = await readBody(c, ApprovalBody);
    const reply = await options.control({ kind: "approval", runId: run.id, pauseId, answer: body });
    if (!reply) throw new ApiError(404, "NOT_FOUND", `run ${run.id} has no open approval ${pauseId}`);
    return c.json({ pauseId, decision: reply.value?.decision });
  });
}
