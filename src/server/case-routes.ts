import type { Hono } from "hono";
import type { Store } from "../store/types.js";
import { recordedCases, SERVED_RECORD_BOUNDS } from "../policy/recorded-cases.js";
import { ApiError } from "./api-error.js";
import { redactToolErrors, type Redactor } from "./redact.js";

/*
 * GET /v1/sessions/:sessionId/cases: a tenant's own recorded session as a case file `hookbox test` runs
 * (docs/policy-tests.md, "Recorded runs as cases"), the same file `hookbox test --record` writes from a store file.
 * The body is the case file itself, so `curl ... > refunds.cases.json` keeps it; what was left out past the
 * bounds is said in headers, never in the file. A tool error's message in a recorded payload is redacted as the
 * session view and the event stream redact it (no host path reaches a tenant).
 */

type Env = { Variables: { tenant: string } };

/** `script` entries a case file may name, and how long each may be. */
const MAX_SCRIPTS = 32;
const MAX_SCRIPT_CHARS = 500;
const MAX_RUN_IDS = 200;

export function registerCaseRoutes(app: Hono<Env>, { store, redact }: { store: Store; redact: Redactor }): void {
  app.get("/v1/sessions/:sessionId/cases", async (c) => {
    const sessionId = c.req.param("sessionId");
    const session = await store.getSession(sessionId);
    if (!session || session.tenant !== c.get("tenant")) throw new ApiError(404, "NOT_FOUND", `no session ${sessionId}`);
    const scripts = c.req.queries("script") ?? [];
    if (scripts.length > MAX_SCRIPTS) throw new ApiError(400, "VALIDATION", `script: at most ${MAX_SCRIPTS}`, "script");
    for (const script of scripts)
      if (script.length === 0 || script.length > MAX_SCRIPT_CHARS)
        throw new ApiError(400, "VALIDATION", `script: a path of 1 to ${MAX_SCRIPT_CHARS} characters`, "script");
    const runIds = c.req.queries("runId");
    if (runIds && runIds.length > MAX_RUN_IDS) throw new ApiError(400, "VALIDATION", `runId: at most ${MAX_RUN_IDS}`, "runId");
    if (runIds) {
      const ofSession = new Set((await store.listRuns(sessionId)).map((run) => run.id));
      const stranger = runIds.find((runId) => !ofSession.has(runId));
      if (stranger !== undefined) throw new ApiError(400, "VALIDATION", `runId: session ${sessionId} has no run ${stranger}`, "runId");
    }
    const recorded = await recordedCases(store, sessionId, { scripts, bounds: SERVED_RECORD_BOUNDS, ...(runIds ? { runIds } : {}) });
    if (recorded.runs === 0)
      throw new ApiError(
        404,
        "NOT_FOUND",
        `session ${sessionId} has no recorded hook calls to make cases of${runIds ? " in the runs asked for" : ""}`,
      );
    c.header("hookbox-recorded-runs", String(recorded.runs));
    c.header("hookbox-recorded-calls", String(recorded.calls));
    if (recorded.truncated) c.header("hookbox-recorded-truncated", "true");
    c.header("content-type", "application/json; charset=UTF-8");
    return c.body(redactToolErrors(JSON.stringify(recorded.file), redact));
  });
}
