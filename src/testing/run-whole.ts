import { resolve, dirname } from "node:path";
import type { HookboxEvent } from "../events/types.js";
import { openTenantRuntime } from "../host/tenant-runtime.js";
import type { RunResult, TenantConfig } from "../host/types.js";
import { ScriptedModel, loadScriptedSteps, type ScriptedStep } from "../engine/scripted.js";
import { newId } from "../loop/ids.js";
import type { SandboxPool } from "../sandbox/api.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { EventExpectation, RunCase } from "./case-schema.js";
import { bundleVariant } from "./bundle-variant.js";
import type { BundleInstrumentation } from "./coverage/instrument.js";
import type { CaseWorld } from "./fixtures.js";
import { match, shown, type Mismatch } from "./match.js";
import { runCheck, type StepFailure } from "./run-case.js";

/*
 * A whole run as a case: the stack's scripts with a scripted model, through the real loop (createTenantRuntime),
 * and expectations on how it ended and on its events ("the refund tool never starts with amount > 100").
 */

let runTenants = 0;

/** A tenant name of its own for one whole-run case. */
export function runTenant(): string {
  return `hookbox-test-run-${process.pid}-${++runTenants}`;
}

export interface WholeRunOutcome {
  failures: StepFailure[];
  events: HookboxEvent[];
}

export async function runWhole(
  pool: SandboxPool,
  testCase: RunCase,
  world: CaseWorld,
  options: {
    /** The tenant the run is made for: the one `world`'s kv fixture was written for. */
    tenant: string;
    coverage?: BundleInstrumentation;
    onCounted?: (texts: { script: string; text: string }[]) => void;
  },
): Promise<WholeRunOutcome> {
  const { run, expect, check } = testCase.body;
  const dir = dirname(resolve(testCase.file));
  const steps: ScriptedStep[] = typeof run.model === "string" ? loadScriptedSteps(resolve(dir, run.model)) : run.model.steps;
  const tenant = options.tenant;
  const config: TenantConfig = {
    name: tenant,
    scripts: testCase.scripts.paths.map((path) => ({ path })),
    model: { kind: "scripted", file: "(the case's steps)" },
    ...(testCase.scripts.limits ? { limits: testCase.scripts.limits } : {}),
    capabilities: world.grants,
    ...(run.hostTools ? { hostToolsModule: resolve(dir, run.hostTools) } : {}),
  };
  const variant = bundleVariant({
    ...(options.coverage ? { coverage: options.coverage } : {}),
    ...(world.clockMs !== undefined ? { clockMs: world.clockMs } : {}),
  });
  const events: HookboxEvent[] = [];
  let result: RunResult;
  try {
    const runtime = await openTenantRuntime(config, pool, {
      model: new ScriptedModel(steps, "scripted", { keepCalls: 0 }),
      ...(world.kv ? { kv: world.kv } : {}),
      ...(world.guardModel ? { guardModel: world.guardModel } : {}),
      capabilityFixtures: world.capabilityFixtures,
      ...(variant ? { bundleVariant: variant } : {}),
      ...(options.onCounted ? { onSandboxRunEnd: async (sandboxRun) => options.onCounted!(await sandboxRun.coverage()) } : {}),
    });
    const handle = runtime.start({
      sessionId: newId("ses"),
      prompt: run.prompt,
      options: {
        ...(run.userContext ? { userContext: run.userContext } : {}),
        ...(run.tags ? { tags: run.tags } : {}),
        ...(run.maxIterations !== undefined ? { maxIterations: run.maxIterations } : {}),
        ...(run.errorPolicy ? { errorPolicy: run.errorPolicy } : {}),
      },
    });
    for await (const event of handle.events()) events.push(event);
    result = await handle.wait();
  } finally {
    pool.drop?.(tenant);
  }
  const got: JsonObject = {
    status: result.status,
    ...(result.text !== undefined ? { text: result.text } : {}),
    ...(result.reason !== undefined ? { reason: result.reason } : {}),
    ...(result.errorCode !== undefined ? { errorCode: result.errorCode } : {}),
  };
  const mismatches: Mismatch[] = [];
  for (const key of ["status", "text", "reason", "errorCode"] as const) {
    if (expect[key] === undefined) continue;
    mismatches.push(
      ...(got[key] === undefined ? [{ path: key, expected: shown(expect[key]), got: "(absent)" }] : match(expect[key], got[key], key)),
    );
  }
  const expectations = (expect.events ?? []) as unknown as EventExpectation[];
  expectations.forEach((expectation, index) => mismatches.push(...eventMismatches(expectation, events, `events[${index}]`)));
  const checked = await runCheck(check, { ...got, events });
  if (mismatches.length === 0 && checked === undefined) return { failures: [], events };
  return {
    failures: [
      {
        target: "run",
        expected: expect,
        got,
        mismatches,
        ...(checked !== undefined ? { problem: checked } : {}),
        ...blame(expectations, events),
      },
    ],
    events,
  };
}

/** An event expectation against the run's events. */
export function eventMismatches(expectation: EventExpectation, events: HookboxEvent[], path: string): Mismatch[] {
  const matching = (partial: JsonObject) => events.filter((event) => match(partial, event).length === 0);
  if ("never" in expectation) {
    const found = matching(expectation.never);
    return found.length === 0
      ? []
      : [{ path, expected: `no event like ${shown(expectation.never)}`, got: `seq ${found[0]!.seq}: ${shown(found[0])}` }];
  }
  if ("some" in expectation)
    return matching(expectation.some).length > 0 ? [] : [{ path, expected: `an event like ${shown(expectation.some)}`, got: "none" }];
  if ("count" in expectation) {
    const found = matching(expectation.of).length;
    return found === expectation.count
      ? []
      : [
          {
            path,
            expected: `${expectation.count} event${expectation.count === 1 ? "" : "s"} like ${shown(expectation.of)}`,
            got: `${found}`,
          },
        ];
  }
  let from = 0;
  for (const [index, partial] of expectation.sequence.entries()) {
    const at = events.findIndex((event, i) => i >= from && match(partial, event).length === 0);
    if (at < 0)
      return [{ path: `${path}.sequence[${index}]`, expected: `then an event like ${shown(partial)}`, got: "none after the earlier ones" }];
    from = at + 1;
  }
  return [];
}

/**
 * Which script and hook a failed event expectation points at: for an event of a tool call (`never` found one),
 * the last script whose beforeToolCall decided on that call.
 */
function blame(expectations: EventExpectation[], events: HookboxEvent[]): Pick<StepFailure, "script" | "hook"> {
  for (const expectation of expectations) {
    if (!("never" in expectation)) continue;
    const offending = events.find((event) => match(expectation.never, event).length === 0) as
      (HookboxEvent & { callId?: string }) | undefined;
    const callId = offending?.callId;
    if (callId === undefined) continue;
    const decision = events
      .filter((event) => event.type === "hook-decision" && event.callId === callId && event.hook === "beforeToolCall")
      .at(-1);
    if (decision?.type === "hook-decision") return { script: decision.script, hook: decision.hook };
  }
  return {};
}

export type { Json };
