import { z } from "zod";
import { JsonObjectSchema, JsonSchema } from "../turns/json.js";
import { RUN_STATUSES } from "../turns/keys.gen.js";

/*
 * What the routes answer, as zod schemas the OpenAPI document turns into JSON Schema (openapi.ts). The server's
 * tests validate every real response against its route's schema (test/server/serve-process.ts), so a field a
 * route drops or renames fails them. Objects are open: a later version may add fields, and clients ignore those.
 */

const runStatus = z.enum(["running", ...RUN_STATUSES, "interrupted"]);
const scriptRef = z.object({ name: z.string(), version: z.number().int() });

const count = z.number().int().nonnegative();

export const Health = z.object({
  ok: z.literal(true),
  draining: z.boolean(),
  liveRuns: z.number().int(),
  /** A PostgreSQL store (docs/scale-out.md): this node's name, and whether it reaches the database. */
  node: z.string().optional(),
  store: z.object({ reachable: z.boolean(), reason: z.string().optional() }).optional(),
  /** The tenants' runtimes as serve builds them after listening (absent with --strict: all built before). */
  tenants: z.object({ configured: count, ready: count, building: count, failed: count }).optional(),
});

export const SessionList = z.object({
  sessions: z.array(
    z.object({
      id: z.string(),
      tenant: z.string(),
      createdMs: z.number(),
      status: z.enum(["idle", "running", "interrupted"]),
      runs: z.number().int(),
      lastRun: z.object({ id: z.string(), status: runStatus, prompt: z.string(), startedMs: z.number() }).optional(),
    }),
  ),
  nextCursor: z.string().optional().meta({ description: "pass as ?cursor= for the next page; absent on the last page" }),
});

export const SessionView = z.object({
  sessionId: z.string(),
  tenant: z.string(),
  status: z.enum(["idle", "running", "interrupted"]),
  createdMs: z.number(),
  forkedFrom: z.object({ sessionId: z.string(), runId: z.string() }).optional(),
  runs: z.object({ total: z.number().int(), offset: z.number().int(), limit: z.number().int() }),
  turns: z.array(
    z.object({
      runId: z.string(),
      status: runStatus,
      prompt: z.string(),
      phase: z.string().optional(),
      turn: JsonObjectSchema.optional().meta({ description: "the conversation as of this run (the latest run only): docs/turns.md" }),
    }),
  ),
});

const Pause = z.object({
  pauseId: z.string(),
  runId: z.string(),
  phase: z.string().meta({ description: "after_inference, after_tools or approval" }),
  deadlineMs: z.number(),
  pendingToolCalls: JsonSchema,
  openedMs: z.number(),
});

export const RunView = z.object({
  id: z.string(),
  sessionId: z.string(),
  inferenceId: z.string(),
  prompt: z.string(),
  options: JsonObjectSchema.meta({ description: "the run's options as merged from the tenant, the session and the request" }),
  status: runStatus,
  reason: z.string().optional(),
  errorCode: z.string().optional(),
  iterations: z.number().int(),
  startedMs: z.number(),
  finishedMs: z.number().optional(),
  lastSeq: z.number().int(),
  deployment: z
    .object({
      id: z.string(),
      scripts: z.array(scriptRef.extend({ bundleHash: z.string() })),
      shadow: z.array(scriptRef.extend({ bundleHash: z.string() })),
    })
    .optional(),
  pauses: z.array(Pause).meta({ description: "the run's open pauses" }),
});

export const ScriptList = z.object({
  scripts: z.array(z.object({ name: z.string(), latestVersion: z.number().int(), createdMs: z.number() })),
});

/** A stored script version's fields (GET /v1/scripts/:name lists them with file names only). */
const versionFields = {
  version: z.number().int(),
  entry: z.string(),
  bundleHash: z.string(),
  warnings: z.array(z.string()),
  createdMs: z.number(),
};

export const ScriptVersions = z.object({
  name: z.string(),
  versions: z.array(
    z.object({ ...versionFields, files: z.array(z.string()).meta({ description: "the file names (their text: GET .../versions/:n)" }) }),
  ),
});

export const ScriptVersion = z.object({ name: z.string(), ...versionFields, files: z.record(z.string(), z.string()) });

export const Deployment = z.object({
  deploymentId: z.string(),
  number: z.number().int(),
  scripts: z.array(scriptRef),
  shadow: z.array(scriptRef),
  fromConfig: z.boolean(),
  previousId: z.string().optional(),
  rollbackOf: z.string().optional(),
  createdMs: z.number(),
});

export const DeploymentHistory = z.object({ deployments: z.array(Deployment).meta({ description: "oldest first" }) });

export const ShadowReport = z.object({
  deploymentId: z.string(),
  runs: z.number().int(),
  calls: z.number().int(),
  agreed: z.number().int(),
  disagreed: z.record(z.string(), z.number().int()),
  samples: z.array(
    z.object({
      runId: z.string(),
      callId: z.string(),
      hook: z.string(),
      attempt: z.number().int(),
      active: z.string(),
      shadow: z.string(),
      shadowDecision: JsonSchema,
    }),
  ),
});

export const ReplayResult = z.object({
  changes: z.array(
    z.object({
      sessionId: z.string(),
      runId: z.string(),
      callId: z.string(),
      hook: z.string(),
      attempt: z.number().int(),
      recorded: z.string(),
      replayed: z.string(),
      decision: JsonObjectSchema,
      recordedDecision: JsonObjectSchema,
    }),
  ),
  summary: z.object({
    runs: z.number().int(),
    calls: z.number().int(),
    same: z.number().int(),
    changed: z.record(z.string(), z.number().int()),
    errors: z.number().int(),
    stopped: z
      .object({ code: z.enum(["REPLAY_CALL_LIMIT", "REPLAY_CPU_BUDGET", "REPLAY_HOOK_FAILURES", "REPLAY_ABANDONED"]), message: z.string() })
      .optional(),
  }),
});

export const RecordedCaseFile = z
  .object({
    script: z.string().optional(),
    scripts: z.array(z.string()).optional(),
    cases: z.array(
      z.object({
        name: z.string(),
        note: z.string(),
        steps: z.array(z.object({ hook: z.string(), input: z.object({ payload: JsonObjectSchema }), expect: JsonObjectSchema })),
      }),
    ),
  })
  .meta({ description: "a case file hookbox test runs (docs/policy-tests.md): one case per run, its recorded hook calls as steps" });
