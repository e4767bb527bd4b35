import { HookboxError, isHookboxError } from "../errors.js";
import type { HookPayload, MiddlewareContext, ToolContext } from "../contracts/context.js";
import type { HookReturns } from "../contracts/hook-returns.js";
import type { EventBody } from "../events/types.js";
import type { ChainVerdict } from "../host/types.js";
import { HookChain } from "../loop/hook-chain.js";
import { scriptHookProvider } from "../loop/hook-provider.js";
import { TenantCapabilities } from "../capabilities/tenant-capabilities.js";
import type { SandboxPool, SandboxRun, ScriptManifest, TenantSandbox } from "../sandbox/api.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";
import type { Turn } from "../turns/turn.js";
import { newId } from "../loop/ids.js";
import type { ScriptStack } from "./case-schema.js";
import { bundleVariant } from "./bundle-variant.js";
import type { BundleInstrumentation } from "./coverage/instrument.js";
import type { CaseWorld } from "./fixtures.js";
import { parseCounted } from "./coverage/counted.js";

/*
 * A case's scripts loaded in the real sandbox, as a tenant's are: the pool's worker, the tenant's limits, the
 * manifest check, one fresh context per script for each run. A case is one run: its calls go through the same
 * hook chain a live run's do (src/loop/hook-chain.ts), its capabilities through production's broker with the
 * case's fixtures behind it.
 */

let stacks = 0;

export interface StackLoad {
  pool: SandboxPool;
  stack: ScriptStack;
  /** Counts coverage (and decision sites) into this instrumentation. */
  coverage?: BundleInstrumentation;
  /** The script's clock, when the case pins it. */
  clockMs?: number;
}

export class PolicyStack {
  private constructor(
    private readonly pool: SandboxPool,
    readonly tenant: string,
    private readonly sandbox: TenantSandbox,
    readonly manifests: ScriptManifest[],
    readonly stack: ScriptStack,
    readonly coverage: BundleInstrumentation | undefined,
  ) {}

  /** Loads the stack in a sandbox of its own; rejects as production's load does (SCRIPT_LOAD). */
  static async load(options: StackLoad): Promise<PolicyStack> {
    const tenant = `hookbox-test-${process.pid}-${++stacks}`;
    const sandbox = options.pool.tenant(tenant, options.stack.limits);
    const variant = bundleVariant({
      ...(options.coverage ? { coverage: options.coverage } : {}),
      ...(options.clockMs !== undefined ? { clockMs: options.clockMs } : {}),
    });
    try {
      const manifests = await sandbox.load(
        options.stack.paths.map((path) => ({ path })),
        variant ? { variant } : {},
      );
      return new PolicyStack(options.pool, tenant, sandbox, manifests, options.stack, options.coverage);
    } catch (error) {
      options.pool.drop?.(tenant);
      throw error;
    }
  }

  /** Which script of the stack defines the hook, tool or middleware (the first one, in load order). */
  definer(
    target: { kind: "hook"; hook: HookName } | { kind: "tool"; tool: string } | { kind: "middleware"; middleware: string },
  ): ScriptManifest | undefined {
    if (target.kind === "hook") return this.manifests.find((manifest) => manifest.hooks.includes(target.hook));
    if (target.kind === "tool") return this.manifests.find((manifest) => manifest.tools.some((tool) => tool.name === target.tool));
    return this.manifests.find((manifest) => manifest.middleware.includes(target.middleware));
  }

  /** What the stack defines, for a message about a target it does not. */
  describe(kind: "hook" | "tool" | "middleware"): string {
    const names = this.manifests.flatMap((manifest) =>
      kind === "hook" ? manifest.hooks : kind === "tool" ? manifest.tools.map((tool) => tool.name) : manifest.middleware,
    );
    const owner = this.manifests.map((manifest) => manifest.name).join(", ");
    return `${owner} define${this.manifests.length === 1 ? "s" : ""} ${names.length ? names.join(", ") : `no ${kind}s`}`;
  }

  /** One run of the stack with this outside world; close it when the case is done. */
  async open(world: CaseWorld): Promise<StackRun> {
    const events: EventBody[] = [];
    const capabilities = new TenantCapabilities({
      tenant: this.tenant,
      grants: world.grants,
      runModel: () => {
        throw new HookboxError("CAPABILITY_DENIED", "no run model in a test case");
      },
      ...(world.kv ? { kv: world.kv } : {}),
      ...(world.guardModel ? { guardModel: world.guardModel } : {}),
      fixtures: world.capabilityFixtures,
    });
    const granted = capabilities.forRun({ emit: (event) => events.push(event) });
    const run = await this.sandbox.openRun({
      runId: newId("run"),
      scripts: this.manifests,
      onLog: (entry) => events.push({ type: "log", script: entry.script, level: entry.level, message: entry.message }),
      capabilities: granted.broker,
    });
    return new StackRun(this, run, events, () => granted.close());
  }

  close(): void {
    this.pool.drop?.(this.tenant);
  }
}

/** What a hook chain decided for one call: the deciding decision, the verdict, and which script made it. */
export interface ChainDecision {
  decision: JsonObject;
  verdict: ChainVerdict["verdict"];
  script?: string;
}

/** One case's run of a stack: its calls share the scripts' contexts and the case's kv, as one run's calls do. */
export class StackRun {
  constructor(
    private readonly stack: PolicyStack,
    readonly sandbox: SandboxRun,
    /** Everything the run reported: hook decisions, capability requests, logs. */
    readonly events: EventBody[],
    private readonly closeCapabilities: () => void,
  ) {}

  /** The hook chain over every script of the stack that defines `hook`, as a live run evaluates it. */
  async hook(hook: HookName, payload: HookPayload): Promise<ChainDecision> {
    let verdict: ChainVerdict | undefined;
    const chain = new HookChain(
      this.stack.manifests.map((manifest) => scriptHookProvider(manifest, this.sandbox)),
      { emit: (event) => this.events.push(event) },
      { onVerdict: (given) => (verdict = given) },
    );
    const from = this.events.length;
    await (chain[hook] as (payload: HookPayload) => Promise<unknown>).call(chain, payload);
    const decided = this.events.slice(from).filter((event) => event.type === "hook-decision");
    const last = decided.at(-1);
    return {
      decision: verdict?.decision ?? { action: "none" },
      verdict: verdict?.verdict ?? "proceed",
      ...(last?.type === "hook-decision" ? { script: last.script } : {}),
    };
  }

  /** One script's hook, called directly: its validated return (what hookbox/testing's hook methods give). */
  callHook<H extends HookName>(script: string, hook: H, payload: HookPayload): Promise<HookReturns[H]> {
    return this.sandbox.callHook(script, hook, payload);
  }

  tool(script: string, tool: string, args: JsonObject, ctx: ToolContext): Promise<Json> {
    return this.sandbox.callTool(script, tool, args, ctx);
  }

  /** Runs one middleware; `next` hands the turn back as it was given (no model behind it). */
  async middleware(script: string, middleware: string, turn: Turn, ctx: MiddlewareContext): Promise<{ turn: Turn; calledNext: boolean }> {
    let passed: Turn | undefined;
    const returned = await this.sandbox.callMiddleware(script, middleware, turn, ctx, async (given) => {
      passed = given;
      return given;
    });
    return { turn: passed ?? returned, calledNext: passed !== undefined };
  }

  /** What the instrumented bundles counted so far, by script: counters and the last decision site. */
  async counted(): Promise<Map<string, { counts: number[]; site: number }>> {
    const found = new Map<string, { counts: number[]; site: number }>();
    const expected = this.stack.coverage?.counters;
    if (expected === undefined) return found;
    for (const { script, text } of await this.sandbox.coverage()) {
      const value = parseCounted(text, expected);
      if (value) found.set(script, value);
    }
    return found;
  }

  async close(): Promise<void> {
    this.closeCapabilities();
    await this.sandbox.close();
  }
}

/** A failure as a case reports it: its error code and message. */
export function failureOf(error: unknown): { errorCode: string; error: string } {
  if (isHookboxError(error)) return { errorCode: error.code, error: error.message };
  return { errorCode: "HOST_FAULT", error: error instanceof Error ? error.message : String(error) };
}
