import type { HookPayload, MiddlewareContext, ToolContext } from "../contracts/context.js";
import type { HookReturns } from "../contracts/hook-returns.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";
import type { Turn } from "../turns/turn.js";
import type { CapabilityBroker, LogEntry, SandboxRun, ScriptManifest } from "./api.js";
import type { DoneMessage } from "./wire/protocol.js";
import type { AdmittingRun } from "./admission.js";
import type { CallbackRequest, CallbackRun } from "./callback.js";
import { replyValue, type CallReply } from "./call-args.js";
import { checkToolResultSize } from "../loop/run-budget.js";
import { parseGuestJson, validateGuestHookReturn, validateMiddlewareTurn } from "./validate.js";

/** What a run needs from the tenant sandbox that owns it (TenantSandboxImpl provides it). */
export interface RunOwner {
  /** Admits and runs one callback of this run (admission.ts checks the request). */
  call(run: SandboxRunImpl, request: CallbackRequest): Promise<CallReply>;
  /** What the run's script contexts counted (instrumented bundles). */
  coverage(run: SandboxRunImpl): Promise<{ script: string; text: string }[]>;
  /** The run closed: its callbacks in progress are cancelled. */
  closeRun(run: SandboxRunImpl): void;
}

/**
 * One run's view of a tenant sandbox. Every value coming back is checked against its contract before the
 * host acts on it: hook returns (zod, per hook), middleware turns (TurnSchema), tool results (JSON).
 */
export class SandboxRunImpl implements SandboxRun, AdmittingRun, CallbackRun {
  private readonly scripts: Map<string, ScriptManifest>;
  private isClosed = false;
  private cpuMsUsed = 0;

  constructor(
    private readonly tenant: RunOwner,
    readonly runId: string,
    scripts: ScriptManifest[],
    readonly onLog: ((entry: LogEntry) => void) | undefined,
    readonly capabilities?: CapabilityBroker,
  ) {
    this.scripts = new Map(scripts.map((manifest) => [manifest.name, manifest]));
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** AdmittingRun: the run's manifest of `script`, as it was when the run opened. */
  manifest(script: string): ScriptManifest | undefined {
    return this.scripts.get(script);
  }

  async callMiddleware(
    script: string,
    middleware: string,
    turn: Turn,
    ctx: MiddlewareContext,
    next: (turn: Turn) => Promise<Turn>,
  ): Promise<Turn> {
    const reply = await this.tenant.call(this, {
      script,
      kind: "middleware",
      target: middleware,
      args: [turn, ctx],
      next: async (turnText) => {
        // The turn a script passes to next() is checked like the one it returns.
        const passed = validateMiddlewareTurn(script, `${middleware} (the turn passed to next())`, parseGuestJson(turnText));
        return JSON.stringify(await next(passed));
      },
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
    const reply = await this.tenant.call(this, { script, kind: "tool", target: tool, args: [args, ctx] });
    // Measured on the text, so an over-budget result is never parsed on the host.
    checkToolResultSize(tool, reply.text.length, limits.maxResultBytes);
    // A handler that returns nothing produced the JSON value null.
    return replyValue(reply) ?? null;
  }

  callHook<H extends HookName>(script: string, hook: H, payload: HookPayload): Promise<HookReturns[H]> {
    // Two of these per tool call: a then() costs less than an async function's frame (call() never throws: it rejects).
    return this.tenant
      .call(this, { script, kind: "hook", target: hook, args: [payload] })
      .then((reply) => validateGuestHookReturn(script, hook, replyValue(reply)));
  }

  cpuMs(): number {
    return this.cpuMsUsed;
  }

  coverage(): Promise<{ script: string; text: string }[]> {
    return this.tenant.coverage(this);
  }

  /** Adds the guest CPU a worker's reply to one of this run's messages reports to its total. */
  charge(done: DoneMessage): void {
    this.cpuMsUsed += done.cpuMs ?? 0;
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.tenant.closeRun(this);
  }
}
