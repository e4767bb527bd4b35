import { HookboxError } from "../errors.js";
import type { AfterToolCallPayload, BeforeToolCallPayload, HookPayload, OnToolErrorPayload, ToolErrorInfo } from "../contracts/context.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";
import type { EventBody } from "../events/types.js";
import type { HookProvider } from "./hook-provider.js";
import type { ChainVerdict, Verdict } from "./verdict.js";

export type BeforeOutcome =
  | { kind: "proceed"; args: JsonObject }
  | { kind: "skip"; result: Json; reason?: string }
  | { kind: "deny"; reason: string }
  | { kind: "blocked"; error: ToolErrorInfo }
  | { kind: "abort"; reason: string; errorCode?: string };

export type AfterOutcome = { kind: "apply"; result?: Json; error?: ToolErrorInfo } | { kind: "abort"; reason: string; errorCode?: string };

export type ErrorOutcome =
  | { kind: "default" }
  | { kind: "retry"; backoffMs?: number; args?: JsonObject }
  | { kind: "fail"; error?: string }
  | { kind: "abort"; reason: string; errorCode?: string };

/** What a failing hook leads to, by its script's onHookError policy. */
type HookFailure =
  { policy: "fail-open" } | { policy: "fail-closed"; error: ToolErrorInfo } | { policy: "abort-run"; reason: string; errorCode: string };

/** One chain evaluation in progress: the last decision shown, and whether a hook failure ended it. */
interface Trace {
  decision: JsonObject;
  failed: boolean;
}

export interface HookChainOptions {
  /** A shadow chain: its decisions are `hook-decision {shadow: true}` events, and it writes no logs. */
  shadow?: boolean;
  /** Called once per chain evaluation (recording for replay and the shadow report). */
  onVerdict?(verdict: ChainVerdict): void;
  /** Shadow hooks given every payload this chain is given; what they decide never reaches the run. */
  shadowHooks?: { observe(hook: HookName, payload: HookPayload): void };
}

/**
 * Runs the lifecycle hooks of every provider in load order. Rewrites accumulate (each hook sees the
 * previous one's arguments or result); the first terminal decision ends the chain for that call.
 * Every decision, including "no opinion" and hook failures, becomes a hook-decision event carrying the
 * script's version and bundle hash; every evaluation ends in one verdict (verdict.ts).
 */
export class HookChain {
  constructor(
    private readonly providers: HookProvider[],
    private readonly events: { emit(body: EventBody): unknown },
    private readonly options: HookChainOptions = {},
  ) {}

  async beforeToolCall(payload: BeforeToolCallPayload): Promise<BeforeOutcome> {
    this.options.shadowHooks?.observe("beforeToolCall", payload);
    const trace: Trace = { decision: { action: "none" }, failed: false };
    const outcome = await this.before(payload, trace);
    const verdict: Verdict = trace.failed
      ? "error"
      : outcome.kind === "proceed"
        ? outcome.args === payload.call.args
          ? "proceed"
          : "rewrite"
        : outcome.kind === "blocked"
          ? "error"
          : outcome.kind;
    this.settled("beforeToolCall", payload, verdict, trace);
    return outcome;
  }

  async afterToolCall(payload: AfterToolCallPayload): Promise<AfterOutcome> {
    this.options.shadowHooks?.observe("afterToolCall", payload);
    const trace: Trace = { decision: { action: "none" }, failed: false };
    const outcome = await this.after(payload, trace);
    const same = outcome.kind === "apply" && outcome.result === payload.result && outcome.error === payload.error;
    this.settled(
      "afterToolCall",
      payload,
      trace.failed ? "error" : outcome.kind === "abort" ? "abort" : same ? "proceed" : "rewrite",
      trace,
    );
    return outcome;
  }

  async onToolError(payload: OnToolErrorPayload): Promise<ErrorOutcome> {
    this.options.shadowHooks?.observe("onToolError", payload);
    const trace: Trace = { decision: { action: "none" }, failed: false };
    const outcome = await this.onError(payload, trace);
    this.settled("onToolError", payload, trace.failed ? "error" : outcome.kind, trace);
    return outcome;
  }

  private async before(payload: BeforeToolCallPayload, trace: Trace): Promise<BeforeOutcome> {
    let args = payload.call.args;
    for (const provider of this.with("beforeToolCall")) {
      const current = { ...payload, call: { ...payload.call, args } };
      let decision;
      try {
        decision = await provider.call("beforeToolCall", current);
      } catch (error) {
        const failure = this.fail(provider, "beforeToolCall", payload.call.id, error, trace);
        if (failure.policy === "fail-open") continue;
        if (failure.policy === "abort-run") return { kind: "abort", reason: failure.reason, errorCode: failure.errorCode };
        return { kind: "blocked", error: failure.error };
      }
      this.decided(provider, "beforeToolCall", payload.call.id, decision, trace);
      if (!decision) continue;
      if (decision.action === "proceed") {
        if (decision.args) args = decision.args;
        continue;
      }
      if (decision.action === "skip") return { kind: "skip", result: decision.result, reason: decision.reason };
      if (decision.action === "deny") return { kind: "deny", reason: decision.reason };
      return { kind: "abort", reason: `${provider.name}: ${decision.reason}` };
    }
    return { kind: "proceed", args };
  }

  private async after(payload: AfterToolCallPayload, trace: Trace): Promise<AfterOutcome> {
    let { result, error } = payload;
    for (const provider of this.with("afterToolCall")) {
      let decision;
      try {
        decision = await provider.call("afterToolCall", { ...payload, result, error });
      } catch (failure) {
        const outcome = this.fail(provider, "afterToolCall", payload.call.id, failure, trace);
        if (outcome.policy === "fail-open") continue;
        if (outcome.policy === "abort-run") return { kind: "abort", reason: outcome.reason, errorCode: outcome.errorCode };
        // fail-closed: the result is withheld and the model sees an error instead
        return { kind: "apply", result: undefined, error: { ...outcome.error, message: `result withheld: ${outcome.error.message}` } };
      }
      this.decided(provider, "afterToolCall", payload.call.id, decision, trace);
      if (!decision) continue;
      if ("action" in decision) return { kind: "abort", reason: `${provider.name}: ${decision.reason}` };
      if (decision.result !== undefined) result = decision.result;
      if (typeof decision.error === "string") error = { message: decision.error };
      else if (decision.error === null) error = undefined;
    }
    return { kind: "apply", result, error };
  }

  private async onError(payload: OnToolErrorPayload, trace: Trace): Promise<ErrorOutcome> {
    let retry: Extract<ErrorOutcome, { kind: "retry" }> | undefined;
    for (const provider of this.with("onToolError")) {
      let decision;
      try {
        decision = await provider.call("onToolError", { ...payload, call: { ...payload.call, args: retry?.args ?? payload.call.args } });
      } catch (failure) {
        const outcome = this.fail(provider, "onToolError", payload.call.id, failure, trace);
        if (outcome.policy === "fail-open") continue;
        if (outcome.policy === "abort-run") return { kind: "abort", reason: outcome.reason, errorCode: outcome.errorCode };
        return { kind: "fail" }; // fail-closed: no retry
      }
      this.decided(provider, "onToolError", payload.call.id, decision, trace);
      if (!decision) continue;
      if (decision.action === "retry") {
        retry = { kind: "retry", backoffMs: Math.max(retry?.backoffMs ?? 0, decision.backoffMs ?? 0), args: decision.args ?? retry?.args };
        continue;
      }
      if (decision.action === "fail") return { kind: "fail", error: decision.error };
      return { kind: "abort", reason: `${provider.name}: ${decision.reason}` };
    }
    return retry ?? { kind: "default" };
  }

  private with(hook: HookName): HookProvider[] {
    return this.providers.filter((p) => p.has(hook));
  }

  private settled(hook: HookName, payload: HookPayload & { call: { id: string } }, verdict: Verdict, trace: Trace): void {
    this.options.onVerdict?.({
      hook,
      callId: payload.call.id,
      attempt: payload.attempt,
      verdict,
      decision: trace.decision,
      payload,
      shadow: this.options.shadow ?? false,
    });
  }

  private emitDecision(provider: HookProvider, hook: HookName, callId: string, decision: JsonObject, trace: Trace): void {
    trace.decision = decision;
    this.events.emit({
      type: "hook-decision",
      hook,
      script: provider.name,
      callId,
      decision,
      ...(provider.version !== undefined ? { version: provider.version } : {}),
      ...(provider.bundleHash !== undefined ? { bundleHash: provider.bundleHash } : {}),
      ...(this.options.shadow ? { shadow: true as const } : {}),
    });
  }

  private decided(provider: HookProvider, hook: HookName, callId: string, decision: unknown, trace: Trace): void {
    this.emitDecision(provider, hook, callId, decision === undefined ? { action: "none" } : (decision as JsonObject), trace);
  }

  private fail(provider: HookProvider, hook: HookName, callId: string, error: unknown, trace: Trace): HookFailure {
    const code = error instanceof HookboxError ? error.code : "SCRIPT_ERROR";
    const raw = error instanceof Error ? error.message : String(error);
    const message = raw.includes(hook) ? raw : `${provider.name}: ${hook} failed: ${raw}`;
    const policy = provider.onHookError;
    this.emitDecision(provider, hook, callId, { action: "error", code, message, policy }, trace);
    if (policy === "fail-open") {
      if (!this.options.shadow) this.events.emit({ type: "log", script: provider.name, level: "warn", message: `fail-open: ${message}` });
      return { policy };
    }
    trace.failed = true;
    if (policy === "abort-run") return { policy, reason: message, errorCode: code };
    return { policy, error: { message, code } };
  }
}
