import type { EventBody } from "../events/types.js";
import type { Json } from "../turns/json.js";
import type { CallStep, CallTarget, CallsCase, Check } from "./case-schema.js";
import { hookPayload, middlewareContext, middlewareTurn, runIdentity, toolContext, turnTexts } from "./case-input.js";
import type { CaseWorld } from "./fixtures.js";
import { match, shown, type Mismatch } from "./match.js";
import { failureOf, type PolicyStack } from "./policy-stack.js";

/*
 * One case of calls (a hook, a tool, a middleware, or several in one run) against a loaded stack: each call made
 * as a live run makes it, what came back compared with what the case expects.
 */

/** Why one call of a case failed: the mismatches, or a problem that is not one (a hook the scripts lack). */
export interface StepFailure {
  /** The step's index, for a case of several steps. */
  step?: number;
  /** What was called, as output names it: `beforeToolCall`, `tool refund`, `middleware redactCards`, `run`. */
  target: string;
  expected?: Record<string, Json>;
  got?: unknown;
  mismatches: Mismatch[];
  problem?: string;
  /** The tool call a hook step was about (`call c2 refund {"amount":80}`). */
  call?: string;
  /** The script whose decision (or failure) the case got, and its decision site when one was read. */
  script?: string;
  hook?: string;
  site?: number;
  /** A file:line the failure names itself (a script error's stack). */
  errorAt?: string;
}

export interface CallsOutcome {
  failures: StepFailure[];
  events: EventBody[];
}

export function targetLabel(target: CallTarget): string {
  return target.kind === "hook" ? target.hook : target.kind === "tool" ? `tool ${target.tool}` : `middleware ${target.middleware}`;
}

/**
 * Runs a case's calls in one run of `stack`. With an instrumented stack, `onCounted` gets what the run counted
 * (after the last call), and each failure carries its decision site.
 */
export async function runCalls(
  stack: PolicyStack,
  testCase: CallsCase,
  world: CaseWorld,
  onCounted?: (counted: Map<string, { counts: number[]; site: number }>) => void,
): Promise<CallsOutcome> {
  const run = await stack.open(world);
  const failures: StepFailure[] = [];
  try {
    const ids = runIdentity();
    for (const [index, step] of testCase.body.steps.entries()) {
      const label = { ...(testCase.body.steps.length > 1 ? { step: index } : {}), target: targetLabel(step.target) };
      const definer = stack.definer(step.target);
      // A recorded call (its payload as given) of a hook no script defines now is what production would run: an
      // empty chain, which proceeds. A written case naming such a hook is a mistake worth saying.
      const recorded = step.target.kind === "hook" && step.input.payload !== undefined;
      if (definer === undefined && !recorded) {
        const kind = step.target.kind;
        failures.push({ ...label, mismatches: [], problem: `no script here defines ${label.target}: ${stack.describe(kind)}` });
        continue;
      }
      const nowMs = world.clockMs ?? Date.now();
      const got = await call(run, step, definer?.name ?? "", nowMs, ids, stack);
      const mismatches = compare(step, got);
      const checked = await runCheck(step.check, got);
      let site: number | undefined;
      const script = got.script ?? definer?.name;
      if (stack.coverage) {
        const counted = await run.counted();
        site = script === undefined ? undefined : counted.get(script)?.site;
        if (index === testCase.body.steps.length - 1) onCounted?.(counted);
      }
      if (mismatches.length === 0 && checked === undefined) continue;
      const toolCall = callOf(step);
      failures.push({
        ...label,
        ...(toolCall ? { call: toolCall } : {}),
        expected: step.expect,
        got: got.value,
        mismatches,
        ...(checked !== undefined ? { problem: checked } : {}),
        ...(script !== undefined ? { script } : {}),
        ...(step.target.kind === "hook" ? { hook: step.target.hook } : {}),
        ...(site !== undefined && site >= 0 ? { site } : {}),
        ...(got.errorAt ? { errorAt: got.errorAt } : {}),
      });
    }
  } finally {
    await run.close();
  }
  return { failures, events: run.events };
}

/** The tool call a hook step is about, as a failure names it: `call c2 refund {"amount":80}` (attempt 2 when retried). */
function callOf(step: CallStep): string | undefined {
  if (step.target.kind !== "hook") return undefined;
  const payload = step.input.payload as { call?: { id?: unknown; name?: unknown; args?: unknown }; attempt?: unknown } | undefined;
  const call = payload
    ? payload.call
    : step.input.tool !== undefined
      ? { id: step.input.callId, name: step.input.tool, args: step.input.args }
      : undefined;
  if (call === undefined || typeof call.name !== "string") return undefined;
  const attempt = payload ? payload.attempt : step.input.attempt;
  const id = typeof call.id === "string" ? ` ${call.id}` : "";
  return `call${id} ${call.name} ${shown(call.args ?? {})}${typeof attempt === "number" && attempt > 1 ? ` (attempt ${attempt})` : ""}`;
}

interface Got {
  /** What the case's expectation is compared with. */
  value: Record<string, unknown>;
  script?: string;
  errorAt?: string;
}

async function call(
  run: Awaited<ReturnType<PolicyStack["open"]>>,
  step: CallStep,
  script: string,
  nowMs: number,
  ids: ReturnType<typeof runIdentity>,
  stack: PolicyStack,
): Promise<Got> {
  const { target, input } = step;
  if (target.kind === "hook") {
    const origin = stack.definer({ kind: "tool", tool: input.tool ?? "" }) ? "script" : "host";
    const decided = await run.hook(target.hook, hookPayload(target.hook, input, nowMs, ids, origin));
    const decision = decided.decision;
    const errorCode = decision.action === "error" && typeof decision.code === "string" ? decision.code : undefined;
    const message = typeof decision.message === "string" ? decision.message : undefined;
    return {
      value: {
        ...decision,
        verdict: decided.verdict,
        ...(decided.script ? { script: decided.script } : {}),
        ...(errorCode ? { errorCode } : {}),
      },
      ...(decided.script ? { script: decided.script } : {}),
      ...(errorCode && message ? errorPosition(message) : {}),
    };
  }
  try {
    if (target.kind === "tool") {
      const result = await run.tool(script, target.tool, input.args ?? {}, toolContext(target.tool, input, nowMs, ids));
      return { value: { result }, script };
    }
    const passed = await run.middleware(
      script,
      target.middleware,
      middlewareTurn(input, ids),
      middlewareContext(target.middleware, input, nowMs, ids),
    );
    return { value: { turn: passed.turn, texts: turnTexts(passed.turn), calledNext: passed.calledNext }, script };
  } catch (error) {
    const failure = failureOf(error);
    return { value: failure, script, ...errorPosition(failure.error) };
  }
}

/** The author's file:line a script error's message names (its stack, mapped to the source), if any. */
function errorPosition(message: string): { errorAt?: string } {
  const found = /([^\s():]+\.[cm]?[jt]sx?):(\d+):\d+/.exec(message);
  return found ? { errorAt: `${found[1]}:${found[2]}` } : {};
}

/** The expectation against what came back; `action: "proceed"` also holds for a hook with no opinion. */
export function compare(step: CallStep, got: Got): Mismatch[] {
  const mismatches: Mismatch[] = [];
  for (const [key, expected] of Object.entries(step.expect)) {
    const actual = got.value[key];
    if (key === "action" && expected === "proceed" && actual === "none") continue;
    if (actual === undefined && expected !== null && !(typeof expected === "object" && "$exists" in (expected as object)))
      mismatches.push({ path: key, expected: JSON.stringify(expected), got: "(absent)" });
    else mismatches.push(...match(expected, actual, key));
  }
  return mismatches;
}

/** A `.cases.ts` check function: a throw, `false` or a string fails the case (the string says why). */
export async function runCheck(check: Check | undefined, got: unknown): Promise<string | undefined> {
  if (check === undefined) return undefined;
  try {
    const verdict = await check(got instanceof Object && "value" in got ? (got as Got).value : got);
    if (verdict === false) return "check() returned false";
    if (typeof verdict === "string") return `check(): ${verdict}`;
    return undefined;
  } catch (error) {
    return `check() threw: ${error instanceof Error ? error.message : String(error)}`;
  }
}
