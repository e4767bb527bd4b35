import type { Store } from "../store/types.js";
import type { HookCallRecord } from "../store/policy-types.js";
import type { Json, JsonObject } from "../turns/json.js";

/*
 * A recorded session as a case file (docs/policy-tests.md, "Recorded runs as cases"): each run of the session becomes a
 * case whose steps are the run's hook chain evaluations in order, each given its recorded payload as it was and
 * expected to decide as it did. A decision someone approved in production becomes a test that fails when a later
 * version of the policy decides otherwise. What the store does not keep (the bodies ctx.fetch read, kv contents,
 * guard answers) is named in the case's note: such a policy needs fixtures added by hand.
 */

/** Bounds on what one case file holds. */
export interface RecordBounds {
  maxRuns: number;
  maxCalls: number;
  /** The recorded payloads' JSON, in bytes, at most (a call that would pass it is left out, the first one aside). */
  maxPayloadBytes?: number;
}

/** What `hookbox test --record` writes at most from a store file. */
export const DEFAULT_RECORD_BOUNDS: RecordBounds = { maxRuns: 1000, maxCalls: 20_000 };

/** What the server's GET /v1/sessions/:id/cases answers at most: one response a client keeps whole in memory. */
export const SERVED_RECORD_BOUNDS: RecordBounds = { maxRuns: 200, maxCalls: 2000, maxPayloadBytes: 8 * 1024 * 1024 };

export interface RecordedCases {
  /** The case file's JSON value. */
  file: JsonObject;
  runs: number;
  calls: number;
  /** Runs or calls left out past the bounds. */
  truncated: boolean;
}

/** What the case file expects of one recorded call: its verdict, and the decision's action and rewritten values. */
export function recordedExpectation(call: Pick<HookCallRecord, "verdict" | "decision">): JsonObject {
  const expect: JsonObject = { verdict: call.verdict };
  const decision = call.decision;
  if (decision.action === "error") {
    if (typeof decision.code === "string") expect.errorCode = decision.code;
  } else if (typeof decision.action === "string" && decision.action !== "none") expect.action = decision.action;
  // What a rewrite produced must stay the same value; a reason's wording may change.
  for (const key of ["args", "result", "prompt", "error", "message"] as const)
    if (key in decision && (key !== "message" || decision.action === "continue")) expect[key] = { $eq: decision[key] as Json };
  return expect;
}

export async function recordedCases(
  store: Store,
  sessionId: string,
  options: { scripts?: string[]; bounds?: RecordBounds; /** Only these runs of the session. */ runIds?: string[] } = {},
): Promise<RecordedCases> {
  const bounds = options.bounds ?? DEFAULT_RECORD_BOUNDS;
  const wanted = options.runIds && new Set(options.runIds);
  // Numbered as the session's runs, whichever are picked.
  const runs = (await store.findRuns({ sessionIds: [sessionId] }))
    .map((run, index) => ({ run, number: index + 1 }))
    .filter(({ run }) => !wanted || wanted.has(run.id));
  const cases: JsonObject[] = [];
  let calls = 0;
  let payloadBytes = 0;
  let truncated = runs.length > bounds.maxRuns;
  for (const { run, number } of runs.slice(0, bounds.maxRuns)) {
    const recorded = (await store.listHookCalls(run.id)).filter((call) => !call.shadow && call.payload !== undefined);
    if (recorded.length === 0) continue;
    const room = bounds.maxCalls - calls;
    if (room <= 0) {
      truncated = true;
      break;
    }
    if (recorded.length > room) truncated = true;
    const taken: HookCallRecord[] = [];
    for (const call of recorded.slice(0, room)) {
      if (bounds.maxPayloadBytes !== undefined) {
        payloadBytes += JSON.stringify(call.payload).length;
        if (payloadBytes > bounds.maxPayloadBytes && calls + taken.length > 0) {
          truncated = true;
          break;
        }
      }
      taken.push(call);
    }
    if (taken.length === 0) break;
    calls += taken.length;
    const used = await capabilitiesUsed(store, run.id);
    const scripts = run.deployment?.scripts.map((script) => `${script.name}@v${script.version}`).join(", ");
    cases.push({
      name: `run ${number} of session ${sessionId} (${run.id})`,
      note: [
        `recorded ${new Date(run.startedMs).toISOString()}${scripts ? ` with ${scripts}` : ""}: prompt ${JSON.stringify(run.prompt.slice(0, 200))}`,
        ...(used.length ? [`the run used ${used.join(", ")}: give the case fixtures for them`] : []),
      ].join("; "),
      steps: taken.map((call) => ({
        hook: call.hook,
        input: { payload: call.payload as JsonObject },
        expect: recordedExpectation(call),
      })),
    });
    if (taken.length < Math.min(recorded.length, room)) break;
  }
  return {
    file: {
      ...(options.scripts?.length ? (options.scripts.length === 1 ? { script: options.scripts[0]! } : { scripts: options.scripts }) : {}),
      cases,
    },
    runs: cases.length,
    calls,
    truncated,
  };
}

/** The capabilities a run's scripts asked for (the store keeps the requests, not what they read). */
async function capabilitiesUsed(store: Store, runId: string): Promise<string[]> {
  const used = new Set<string>();
  for (const event of await store.listEvents(runId, 0, { limit: 5000 })) {
    if (event.type !== "capability") continue;
    if (event.kind === "fetch") used.add(`ctx.fetch ${event.method ?? "GET"} ${event.url ?? ""}`.trim());
    else if (event.kind === "kv") used.add("ctx.kv");
    else used.add("ctx.model.generate");
    if (used.size >= 20) break;
  }
  return [...used];
}
