import type { Context, Hono } from "hono";
import { jsonPath } from "../contracts/json-path.js";
import type { SessionManager } from "../session/manager.js";
import type { RunRecord } from "../store/types.js";
import { ApiError } from "./api-error.js";
import { ApprovalBody, readBody } from "./bodies.js";

/**
 * `POST /v1/runs/:runId/approvals/:pauseId` `{decision: "approve" | "reject", args?, reason?}`: answers one of
 * the run's open approvals. 404 when the id is not an open approval of this run (another run's, a closed one,
 * a run not live in this process); 400 naming the field when edited `args` break the tool's schema, and the
 * approval stays open for a corrected answer.
 */
type Env = { Variables: { tenant: string } };

export function approvalRoute(
  app: Hono<Env>,
  options: { manager: SessionManager; ownedRun(c: Context<Env>, runId: string): Promise<RunRecord> },
): void {
  app.post("/v1/runs/:runId/approvals/:pauseId", async (c) => {
    const run = await options.ownedRun(c, c.req.param("runId"));
    const pauseId = c.req.param("pauseId");
    const body = await readBody(c, ApprovalBody);
    const result = options.manager.liveRun(run.id)?.answerApproval(pauseId, body);
    if (!result || (!result.ok && result.code === "NOT_FOUND"))
      throw new ApiError(404, "NOT_FOUND", `run ${run.id} has no open approval ${pauseId}`);
    if (!result.ok) throw new ApiError(400, "VALIDATION", result.message, jsonPath(["args", ...result.path]));
    return c.json({ pauseId, decision: result.decision });
  });
}
