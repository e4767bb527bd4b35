import { HookboxError } from "../errors.js";
import type { HookPayload, MiddlewareContext, ToolContext } from "../contracts/context.js";
import type { HookReturns } from "../contracts/hook-returns.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";
import type { Turn } from "../turns/turn.js";
import type { CapabilityBroker, LogEntry, SandboxRun, ScriptManifest } from "./api.js";
import type { CallKind, DoneMessage } from "./wire/protocol.js";
import { replyValue, type CallReply } from "./call-args.js";
import { checkToolResultSize } from "../loop/run-budget.js";
import { parseGuestJson, validateGuestHookReturn, validateMiddlewareTurn } from "./validate.js";

/** What a run needs from the tenant sandbox that owns it (TenantSandboxImpl provides it). */
export interface RunOwner {
  call(
    run: SandboxRunImpl,
    script: string,
    kind: CallKind,
    target: string,
    args: unknown[],
    next?: (turnText: string) => Promise<string>,
  ): Promise<CallReply>;
  registerRun(run: SandboxRunImpl): void;
  unregisterRun(run: SandboxRunImpl): void;
  closeRun(runId: string): void;
}

/**
 * One run's view of a tenant sandbox. Every value coming back is checked against its contract before the
 * host acts on it: hook returns (zod, per hook), middleware turns (TurnSchema), tool results (JSON).
 */
export class SandboxRunImpl implements SandboxRun {
  private readonly scripts: Map<string, ScriptManifest>;
  private closed = false;
  private cpuMsUsed = 0;

  constructor(
    private readonly tenant: RunOwner,
    readonly runId: string,
    scripts: ScriptManifest[],
    readonly onLog: ((entry: LogEntry) => void) | undefined,
    readonly capabilities?: CapabilityBroker,
  ) {
    this.scripts = new Map(scripts.map((manifest) => [manifest.name, manifest]));
    tenant.registerRun(this);
  }

  async callMiddleware(
    script: string,
    middleware: string,
    turn: Turn,
    ctx: MiddlewareContext,
    next: (turn: Turn) => Promise<Turn>,
  ): Promise<Turn> {
    this.check(script, "middleware", middleware);
    const reply = await this.tenant.call(this, script, "middleware", middleware, [turn, ctx], async (turnText) => {
      // The turn a script passes to next() is checked like the one it returns.
      const passed = validateMiddlewareTurn(script, `${middleware} (the turn passed to next())`, parseGuestJson(turnText));
      return JSON.stringify(await next(passed));
    });
    return validateMiddlewareTurn(script, middleware, replyValue(reply));
  }

  async callTool(
    script: string,
    tool: string,
    args: JsonObject,
    ctx: ToolContext,
    limits: { maxResultBytes?: number } = {},
  ): Promise<Json> {
    this.check(script, "tool", tool);
    const reply = await this.tenant.call(this, script, "tool", tool, [args, ctx]);
    // Measured on the text, so an over-budget result is never parsed on the host.
    checkToolResultSize(tool, reply.text.length, limits.maxResultBytes);
    // A handler that returns nothing produced the JSON value null.
    return replyValue(reply) ?? null;
  }

  async callHook<H extends HookName>(script: string, hook: H, payload: HookPayload): Promise<HookReturns[H]> {
    this.check(script, "hook", hook);
    const reply = await this.tenant.call(this, script, "hook", hook, [payload]);
    return validateGuestHookReturn(script, hook, replyValue(reply));
  }

  cpuMs(): number {
    return this.cpuMsUsed;
  }

  /** Adds the guest CPU a worker reply reports to this run's total. */
  charged(reply: Promise<DoneMessage>): Promise<DoneMessage> {
    return reply.then((done) => {
      this.cpuMsUsed += done.cpuMs ?? 0;
      return done;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tenant.closeRun(this.runId);
    this.tenant.unregisterRun(this);
  }

  private check(script: string, kind: "middleware" | "tool" | "hook", name: string): void {
    if (this.closed) throw new HookboxError("CANCELLED", `run ${this.runId} is closed`);
    const manifest = this.scripts.get(script);
    if (manifest === undefined) throw new HookboxError("SCRIPT_ERROR", `script "${script}" is not part of run ${this.runId}`);
    const known = kind === "middleware" ? manifest.middleware : kind === "tool" ? manifest.tools.map((tool) => tool.name) : manifest.hooks;
    if (!(known as string[]).includes(name)) throw new HookboxError("SCRIPT_ERROR", `script "${script}" has no ${kind} named "${name}"`);
  }
}
