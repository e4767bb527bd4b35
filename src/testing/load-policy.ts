import { relative, resolve } from "node:path";
import type {
  AfterToolCallReturn,
  BeforeFinishReturn,
  BeforeRunReturn,
  BeforeToolCallReturn,
  Json,
  OnToolErrorReturn,
  Turn,
} from "hookbox/script";
import type { LoadPolicyOptions, Policy, PolicyCalls } from "hookbox/testing";
import { HookboxError } from "../errors.js";
import { createSandboxPool, type SandboxPool, type SupervisedSandboxPool } from "../sandbox/index.js";
import type { HookName } from "../turns/keys.gen.js";
import type { Turn as HostTurn } from "../turns/turn.js";
import type { CaseInput, Fixtures, Grants } from "./case-schema.js";
import { hookPayload, middlewareContext, middlewareTurn, runIdentity, toolContext, turnTexts, type RunIdentity } from "./case-input.js";
import { caseWorld, fixtureProblems, type CaseWorld } from "./fixtures.js";
import { PolicyStack, type StackRun } from "./policy-stack.js";

/*
 * `hookbox/testing` for vitest and node:test (docs/policy-tests.md): a script loaded in the real sandbox, its hooks,
 * tools and middleware called like a live run calls them, each return validated against its contract before it
 * comes back (a contract violation, a throw, a timeout reject with the HookboxError a run would record). The
 * returns are typed by the script API's own declarations (`hookbox/script`, generated in part from
 * codegen/spec.json), so a test reads `decision?.action` with the types the policy was written against.
 *
 * Every call made on the policy object is a run of its own with the fixtures' outside world (kv as the fixtures
 * give it, empty by default): nothing one test does reaches the next, whatever the test framework. A session
 * (`policy.session()`) makes several calls in one run: shared script globals, one kv.
 */

export type {
  AfterToolCallInput,
  BeforeFinishInput,
  BeforeRunInput,
  LoadPolicyOptions,
  MiddlewareInput,
  MiddlewareOutcome,
  OnToolErrorInput,
  Policy,
  PolicyCalls,
  PolicyFixtures,
  PolicyGrants,
  PolicyLimits,
  PolicySession,
  RunState,
  ToolCallInput,
} from "hookbox/testing";

/** The helper's own pool: one per process (a test file's), closed with the last policy or as the process ends. */
let shared: { pool: SupervisedSandboxPool; users: number } | undefined;

function takePool(): SupervisedSandboxPool {
  if (!shared) {
    const pool = createSandboxPool();
    shared = { pool, users: 0 };
    // Idle workers never keep the process alive; a policy left open is closed as the process ends.
    process.once("beforeExit", () => void closePool(pool));
  }
  shared.users += 1;
  return shared.pool;
}

async function closePool(pool: SupervisedSandboxPool): Promise<void> {
  if (shared?.pool === pool) shared = undefined;
  await pool.close();
}

async function releasePool(pool: SupervisedSandboxPool): Promise<void> {
  if (shared?.pool !== pool) return;
  shared.users -= 1;
  if (shared.users === 0) await closePool(pool);
}

/** Loads a script (relative to the working directory) in the sandbox; rejects with SCRIPT_LOAD as a tenant's load would. */
export async function loadPolicy(path: string, options: LoadPolicyOptions & { pool?: SandboxPool } = {}): Promise<Policy> {
  const file = resolve(path);
  const grants = options.grants ?? {};
  const fixtures = (options.fixtures ?? {}) as Fixtures;
  checkFixtures(fixtures, grants as Grants);
  const own = options.pool === undefined ? takePool() : undefined;
  const pool = options.pool ?? own!;
  let stack: PolicyStack;
  try {
    stack = await PolicyStack.load({
      pool,
      stack: { key: file, paths: [file], grants: grants as Grants, ...(options.limits ? { limits: options.limits } : {}) },
      ...(typeof fixtures.clock !== "undefined" ? { clockMs: clockOf(fixtures.clock) } : {}),
    });
  } catch (error) {
    if (own) await releasePool(own);
    throw error;
  }
  const manifest = stack.manifests[0]!;
  const shown = relative(process.cwd(), file) || file;
  let closed = false;
  const open = async (given: Fixtures): Promise<{ run: StackRun; world: CaseWorld; ids: RunIdentity }> => {
    if (closed) throw new HookboxError("USAGE", `${shown}: the policy was closed`);
    const world = await caseWorld(stack.tenant, given, grants as Grants);
    return { run: await stack.open(world), world, ids: runIdentity() };
  };
  const once =
    <T>(work: (run: StackRun, world: CaseWorld, ids: RunIdentity) => Promise<T>) =>
    async (): Promise<T> => {
      const { run, world, ids } = await open(fixtures);
      try {
        return await work(run, world, ids);
      } finally {
        await run.close();
      }
    };
  const close = async () => {
    if (closed) return;
    closed = true;
    stack.close();
    if (own) await releasePool(own);
  };
  const policy: Policy = {
    name: manifest.name,
    defines: { hooks: [...manifest.hooks], tools: manifest.tools.map((tool) => tool.name), middleware: [...manifest.middleware] },
    ...callsOn((work) => once(work)(), manifest.name, shown, stack),
    async session(sessionFixtures) {
      const given = (sessionFixtures ?? fixtures) as Fixtures;
      if (sessionFixtures) checkFixtures(given, grants as Grants);
      const { run, world, ids } = await open(given);
      return {
        ...callsOn((work) => work(run, world, ids), manifest.name, shown, stack),
        async kv(key) {
          if (!world.kv) return undefined;
          const text = await world.kv.get(stack.tenant, key, world.clockMs ?? Date.now());
          return text === undefined ? undefined : (JSON.parse(text) as Json);
        },
        close: () => run.close(),
      };
    },
    close,
    [Symbol.asyncDispose]: close,
  };
  return policy;
}

function clockOf(clock: number | string): number {
  return typeof clock === "number" ? clock : Date.parse(clock);
}

function checkFixtures(fixtures: Fixtures, grants: Grants): void {
  const problems = fixtureProblems(fixtures, grants);
  if (problems.length)
    throw new HookboxError("CONFIG", problems.map((problem) => `fixtures.${problem.field}: ${problem.message}`).join("; "));
}

type Runner = <T>(work: (run: StackRun, world: CaseWorld, ids: RunIdentity) => Promise<T>) => Promise<T>;

/** The calls of a policy or a session, each made through `runner` (a run of its own, or the session's). */
function callsOn(runner: Runner, script: string, shown: string, stack: PolicyStack): PolicyCalls {
  const hook = <R>(name: HookName, input: CaseInput) =>
    runner(async (run, world, ids) => {
      if (!stack.manifests[0]!.hooks.includes(name))
        throw new HookboxError("USAGE", `${shown} defines no ${name} hook (it defines ${stack.manifests[0]!.hooks.join(", ") || "none"})`);
      const origin = stack.definer({ kind: "tool", tool: input.tool ?? "" }) ? "script" : "host";
      return (await run.callHook(script, name, hookPayload(name, input, world.clockMs ?? Date.now(), ids, origin))) as R;
    });
  return {
    beforeToolCall: (input) => hook<BeforeToolCallReturn>("beforeToolCall", input as CaseInput),
    afterToolCall: (input) => hook<AfterToolCallReturn>("afterToolCall", input as CaseInput),
    onToolError: (input) => hook<OnToolErrorReturn>("onToolError", input as CaseInput),
    beforeRun: (input) => hook<BeforeRunReturn>("beforeRun", input as CaseInput),
    beforeFinish: (input) => hook<BeforeFinishReturn>("beforeFinish", input as CaseInput),
    tool: (name, args = {}, state = {}) =>
      runner(async (run, world, ids) => {
        if (!stack.definer({ kind: "tool", tool: name }))
          throw new HookboxError("USAGE", `${shown} defines no tool ${name} (it defines ${stack.describe("tool")})`);
        const input = { ...state, args } as CaseInput;
        return (await run.tool(script, name, args, toolContext(name, input, world.clockMs ?? Date.now(), ids))) as Json;
      }),
    middleware: (name, input) =>
      runner(async (run, world, ids) => {
        if (!stack.definer({ kind: "middleware", middleware: name }))
          throw new HookboxError("USAGE", `${shown} defines no middleware ${name} (it defines ${stack.describe("middleware")})`);
        const given = input as CaseInput;
        const turn = middlewareTurn(given, ids);
        const passed = await run.middleware(script, name, turn, middlewareContext(name, given, world.clockMs ?? Date.now(), ids));
        return { turn: passed.turn as unknown as Turn, texts: turnTexts(passed.turn as HostTurn), calledNext: passed.calledNext };
      }),
  };
}
