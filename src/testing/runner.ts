import { readFileSync } from "node:fs";
import { relative } from "node:path";
import type { EventBody } from "../events/types.js";
import type { SandboxPool } from "../sandbox/api.js";
import type { CallsCase, TestCase } from "./case-schema.js";
import { BundleInstrumentation } from "./coverage/instrument.js";
import { CoverageCollector } from "./coverage/collector.js";
import { caseWorld, clockMs } from "./fixtures.js";
import { failureOf, PolicyStack } from "./policy-stack.js";
import { compare, runCalls, targetLabel, type StepFailure } from "./run-case.js";
import { runTenant, runWhole } from "./run-whole.js";

/*
 * Runs the cases of case files, one file after another, each case in a fresh run of its scripts (loaded once per
 * file in a sandbox of their own). A failing case is run once more with its bundle instrumented, to say which line
 * of the script made the decision it got; with coverage on, every case runs instrumented and counts.
 */

export interface CaseResult {
  file: string;
  index: number;
  name: string;
  note?: string;
  status: "pass" | "fail";
  durationMs: number;
  failures: StepFailure[];
  /** The script line the failure points at (`policy.ts:52`), and the hook. */
  at?: string;
  /** What the run reported that helps explain a failure: logs, refused capabilities, hook errors. */
  notes: string[];
}

export interface TestReport {
  results: CaseResult[];
  passed: number;
  failed: number;
  durationMs: number;
  coverage?: CoverageCollector;
}

export interface RunnerOptions {
  pool: SandboxPool;
  /** Count coverage (every case runs on its instrumented bundle). */
  coverage?: boolean;
  /** Each result as soon as its case ends. */
  onResult?: (result: CaseResult) => void;
}

/** A stack as a case needs it: loaded, or the error its load gave (which some cases expect). */
type Loaded = { stack: PolicyStack } | { error: { errorCode: string; error: string } };

export async function runCases(files: { file: string; cases: TestCase[] }[], options: RunnerOptions): Promise<TestReport> {
  const started = performance.now();
  const collector = options.coverage ? new CoverageCollector() : undefined;
  const results: CaseResult[] = [];
  for (const { cases } of files) {
    const stacks = new StackCache(options.pool, collector);
    try {
      for (const testCase of cases) {
        const result = await runOne(testCase, stacks, options.pool, collector);
        results.push(result);
        options.onResult?.(result);
      }
    } finally {
      await stacks.close();
    }
  }
  const failed = results.filter((result) => result.status === "fail").length;
  return {
    results,
    passed: results.length - failed,
    failed,
    durationMs: performance.now() - started,
    ...(collector ? { coverage: collector } : {}),
  };
}

/** The stacks of one case file, by scripts, clock and whether they count. */
class StackCache {
  private readonly loaded = new Map<string, Promise<Loaded>>();

  constructor(
    private readonly pool: SandboxPool,
    private readonly collector: CoverageCollector | undefined,
  ) {}

  get(testCase: TestCase, counting: boolean): Promise<Loaded> {
    const clock = clockMs(testCase.fixtures.clock);
    const key = `${testCase.scripts.key}\u0000${clock ?? ""}\u0000${counting ? "counting" : "plain"}`;
    let found = this.loaded.get(key);
    if (found === undefined) {
      const coverage = counting ? new BundleInstrumentation() : undefined;
      found = PolicyStack.load({
        pool: this.pool,
        stack: testCase.scripts,
        ...(coverage ? { coverage } : {}),
        ...(clock !== undefined ? { clockMs: clock } : {}),
      }).then(
        (stack) => {
          // Only the counting stacks of a coverage run count toward the report (a locating re-run's do not).
          if (coverage && this.collector) this.collector.add(coverage);
          return { stack };
        },
        (error: unknown) => ({ error: failureOf(error) }),
      );
      this.loaded.set(key, found);
    }
    return found;
  }

  async close(): Promise<void> {
    for (const loaded of this.loaded.values()) {
      const value = await loaded;
      if ("stack" in value) value.stack.close();
    }
  }
}

async function runOne(
  testCase: TestCase,
  stacks: StackCache,
  pool: SandboxPool,
  collector: CoverageCollector | undefined,
): Promise<CaseResult> {
  const started = performance.now();
  const base = { file: testCase.file, index: testCase.index, name: testCase.name, ...(testCase.note ? { note: testCase.note } : {}) };
  let failures: StepFailure[];
  let events: EventBody[] = [];
  let at: string | undefined;
  if (testCase.body.kind === "run") {
    const coverage = collector ? new BundleInstrumentation() : undefined;
    if (coverage) collector!.add(coverage);
    const tenant = runTenant();
    const world = await caseWorld(tenant, testCase.fixtures, testCase.scripts.grants);
    const outcome = await runWhole(pool, { ...testCase, body: testCase.body }, world, {
      tenant,
      ...(coverage ? { coverage, onCounted: (texts: { script: string; text: string }[]) => collector!.addTexts(coverage, texts) } : {}),
    }).catch((error: unknown) => ({
      failures: [{ target: "run", mismatches: [], problem: `the run could not start: ${failureOf(error).error}` }] as StepFailure[],
      events: [],
    }));
    failures = outcome.failures;
    events = outcome.events;
    const failure = failures[0];
    if (failure?.hook) at = hookLine(testCase.scripts.paths, failure.hook);
  } else {
    const calls: CallsCase = { ...testCase, body: testCase.body };
    const loaded = await stacks.get(testCase, collector !== undefined);
    if ("error" in loaded) failures = loadFailures(calls, loaded.error);
    else {
      // The kv fixture is the stack's tenant's: what its broker reads and writes.
      const world = await caseWorld(loaded.stack.tenant, testCase.fixtures, testCase.scripts.grants);
      const outcome = await runCalls(loaded.stack, calls, world, (counted) => collector?.addCounted(loaded.stack.coverage!, counted));
      failures = outcome.failures;
      events = outcome.events;
      if (failures.length > 0) at = await locate(calls, failures[0]!, loaded.stack, stacks);
    }
  }
  return {
    ...base,
    status: failures.length === 0 ? "pass" : "fail",
    durationMs: performance.now() - started,
    failures,
    ...(at ? { at } : {}),
    notes: failures.length ? notesOf(events) : [],
  };
}

/** A stack that did not load: each call got that load error (a case may expect it: errorCode SCRIPT_LOAD). */
function loadFailures(testCase: CallsCase, error: { errorCode: string; error: string }): StepFailure[] {
  const got = { action: "error", errorCode: error.errorCode, error: error.error, message: error.error };
  return testCase.body.steps.flatMap((step, index) => {
    const mismatches = compare(step, { value: got });
    if (mismatches.length === 0) return [];
    return [
      {
        ...(testCase.body.steps.length > 1 ? { step: index } : {}),
        target: targetLabel(step.target),
        expected: step.expect,
        got,
        mismatches,
        problem: `the scripts did not load: ${error.error}`,
      },
    ];
  });
}

/**
 * The line a failed call's decision came from: the case is run again on its instrumented bundle (unless it ran on
 * one) and the deciding script's last decision site is read; a hook that returned nothing points at its own line.
 */
async function locate(testCase: CallsCase, failure: StepFailure, stack: PolicyStack, stacks: StackCache): Promise<string | undefined> {
  if (failure.errorAt) return failure.errorAt;
  let located = failure;
  let instrumented = stack;
  if (!stack.coverage) {
    const loaded = await stacks.get(testCase, true);
    if ("error" in loaded) return undefined;
    instrumented = loaded.stack;
    // A fresh world: the first run may have changed its kv.
    const again = await caseWorld(instrumented.tenant, testCase.fixtures, testCase.scripts.grants);
    const outcome = await runCalls(instrumented, testCase, again).catch(() => undefined);
    located = outcome?.failures.find((each) => each.step === failure.step && each.target === failure.target) ?? failure;
  }
  const site = located.site !== undefined ? instrumented.coverage?.site(located.site) : undefined;
  const hook = failure.hook ? ` (${failure.hook})` : "";
  if (site) return `${shownPath(site.path)}:${site.line}${hook}`;
  if (failure.hook) return hookLine(testCase.scripts.paths, failure.hook);
  return undefined;
}

/** The line a hook is defined on, in the first of `paths` that defines a function by that name. */
function hookLine(paths: string[], hook: string): string | undefined {
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      continue;
    }
    const map = new BundleInstrumentation();
    map.instrumentSource(path, text);
    const found = map.files[0]?.functions.find((fn) => fn.name === hook);
    if (found) return `${shownPath(path)}:${found.line} (${hook})`;
  }
  return undefined;
}

function shownPath(path: string): string {
  return relative(process.cwd(), path) || path;
}

/** Logs, refused capabilities and hook errors of a failed case, one line each (at most 10). */
function notesOf(events: EventBody[]): string[] {
  const notes: string[] = [];
  for (const event of events) {
    if (event.type === "log") notes.push(`log ${event.level} ${event.script}: ${event.message}`);
    else if (event.type === "capability" && !event.ok)
      notes.push(
        `${event.kind === "fetch" ? `ctx.fetch ${event.method ?? ""} ${event.url ?? ""}` : event.kind === "kv" ? `ctx.kv.${event.op ?? ""}` : "ctx.model.generate"} refused: ${event.errorCode ?? "failed"}`,
      );
    else if (event.type === "hook-decision" && event.decision.action === "error")
      notes.push(`${event.script} ${event.hook}: ${String(event.decision.code)}: ${String(event.decision.message)}`);
  }
  return notes.slice(0, 10);
}
