import { HookboxError } from "../errors.js";
import { refuseForProviderCall } from "../contracts/provider-run-calls.js";
import type {
  AfterToolCallPayload,
  BeforeFinishPayload,
  BeforeRunPayload,
  BeforeToolCallPayload,
  HookPayload,
  OnToolErrorPayload,
  ToolErrorInfo,
} from "../contracts/context.js";
import type { Json, JsonObject } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";
import type { EventBody } from "../events/types.js";
import type { HookProvider } from "./hook-provider.js";
import type { Approvals } from "./approvals.js";
import { ArgumentsPassed } from "./arguments-passed.js";
import { RUN_CALL_ID, runHookVerdict, toolHookVerdict, type Trace } from "./verdict.js";
import type { ChainVerdict, Verdict } from "../host/types.js";

export type BeforeOutcome =
  | { kind: "proceed"; args: JsonObject }
  | { kind: "skip"; result: Json; reason?: string }
  | { kind: "deny"; reason: string }
  | { kind: "blocked"; error: ToolErrorInfo }
  | { kind: "abort"; reason: string; errorCode?: string };

export type AfterOutcome =
  /** `withheld`: a hook failed fail-closed, so `error` is the failure, not the tool's. */
  { kind: "apply"; result?: Json; error?: ToolErrorInfo; withheld?: true } | { kind: "abort"; reason: string; errorCode?: string };

export type ErrorOutcome =
  | { kind: "default" }
  | { kind: "retry"; backoffMs?: number; args?: JsonObject }
  | { kind: "fail"; error?: string }
  | { kind: "abort"; reason: string; errorCode?: string };

export type RunStartOutcome = { kind: "proceed"; prompt: string } | { kind: "deny"; reason: string; errorCode: string };

export type FinishOutcome =
  | { kind: "finish" }
  | { kind: "continue"; message: string; script: string }
  | { kind: "abort"; reason: string; errorCode?: string }
  | { kind: "failed"; reason: string; errorCode: string };

export interface HookChainOptions {
  /** Answers `ask` decisions; without it an ask ends the chain (shadow chains, replay). */
  approvals?: Approvals;
  /** A shadow chain: its decisions are `hook-decision {shadow: true}` events, and it writes no logs. */
  shadow?: boolean;
  /** Called once per hook chain evaluation (recording for replay and the shadow report). */
  onVerdict?(verdict: ChainVerdict): void;
  /** Shadow hooks given every hook payload this chain is given; what they decide never reaches the run. */
  shadowHooks?: { observe(hook: HookName, payload: HookPayload): void };
}

export interface BeforeOptions {
  signal?: AbortSignal;
  recheck?: boolean;
}

type HookDecisionBody = Extract<EventBody, { type: "hook-decision" }>;

/** How many passes of the beforeToolCall chain may go over rewritten arguments before the call is denied. */
export const MAX_ARGUMENT_PASSES = 4;

/** What a failing hook leads to, by its script's onHookError policy. */
type HookFailure =
  | { policy: "fail-open" }
  | { policy: "fail-closed"; error: ToolErrorInfo & { code: string } }
  | { policy: "abort-run"; reason: string; errorCode: string };

/**
 * Runs the lifecycle hooks of every provider in load order. Rewrites accumulate (each hook sees the
 * previous one's arguments or result); the first terminal decision ends the chain for that call.
 * Every decision, including "no opinion" and hook failures, becomes a hook-decision event carrying the
 * script's version and bundle hash; every evaluation of a chain ends in one verdict (verdict.ts).
 *
 * `ask` (beforeToolCall) waits for a human right there: approved, the chain goes on with the approved
 * arguments (later hooks still run); rejected or timed out, it ends as a deny. Run hooks: beforeRun
 * rewrites accumulate and the first deny ends the chain; in beforeFinish the first continue or abort does.
 */
export class HookChain {
  constructor(
    private readonly providers: HookProvider[],
    private readonly events: { emit(body: EventBody): unknown },
    private readonly options: HookChainOptions = {},
  ) {}

  // beforeToolCall and afterToolCall are one async function each (two per tool call: no closures, no promise per
  // level); they report their verdict under the call's id and attempt themselves.
  /**
   * `signal` ends an open approval of this call when its batch stops (another call aborted the run);
   * `recheck` marks arguments other hooks produced (a retry's): every decision on them is a re-check.
   */
  beforeToolCall(payload: BeforeToolCallPayload, options: BeforeOptions = {}): Promise<BeforeOutcome> {
    return this.before(payload, options);
  }

  afterToolCall(payload: AfterToolCallPayload): Promise<AfterOutcome> {
    return this.after(payload);
  }

  /**
   * Whether an evaluation of `hook` would only give its default outcome and report nothing: no provider has the
   * hook, and nobody records verdicts or watches as a shadow. The loop then skips building its payload.
   */
  passesThrough(hook: HookName): boolean {
    return this.options.onVerdict === undefined && this.options.shadowHooks === undefined && this.with(hook).length === 0;
  }

  async onToolError(payload: OnToolErrorPayload): Promise<ErrorOutcome> {
    const trace = this.started("onToolError", payload);
    return this.toolVerdict("onToolError", payload, await this.onError(payload, trace), trace);
  }

  /** An evaluation starts: shadows see the payload; its trace. */
  private started(hook: HookName, payload: HookPayload): Trace {
    this.options.shadowHooks?.observe(hook, payload);
    return { decision: { action: "none" }, failed: false, asked: false };
  }

  /** A tool-call hook evaluation ended in `outcome`: its verdict is reported (when anyone records verdicts). */
  private toolVerdict<O extends BeforeOutcome | AfterOutcome | ErrorOutcome>(
    hook: "beforeToolCall" | "afterToolCall" | "onToolError",
    payload: BeforeToolCallPayload | AfterToolCallPayload | OnToolErrorPayload,
    outcome: O,
    trace: Trace,
  ): O {
    const onVerdict = this.options.onVerdict;
    if (onVerdict === undefined) return outcome;
    const verdict = toolHookVerdict(hook, payload, outcome, trace);
    onVerdict({
      hook,
      callId: payload.call.id,
      attempt: payload.attempt,
      verdict,
      decision: trace.decision,
      payload,
      shadow: this.options.shadow ?? false,
    });
    return outcome;
  }

  /** One chain evaluation: shadows see the payload, the chain decides, its verdict is reported under `at`. */
  private async evaluated<O>(
    hook: HookName,
    payload: HookPayload,
    at: { callId: string; attempt: number },
    chain: (trace: Trace) => Promise<O>,
    verdictOf: (outcome: O, trace: Trace) => Verdict,
  ): Promise<O> {
    const trace = this.started(hook, payload);
    const outcome = await chain(trace);
    const verdict = verdictOf(outcome, trace);
    this.options.onVerdict?.({ hook, ...at, verdict, decision: trace.decision, payload, shadow: this.options.shadow ?? false });
    return outcome;
  }

  /**
   * The arguments a tool runs with have passed every beforeToolCall hook of the chain. A pass asks, in load
   * order, each hook that has not yet let these very arguments through (compared as JSON values); a hook's own
   * rewrite, and an approver's answer to the hook that asked, count as seen by that hook. When a hook rewrites
   * the arguments, the hooks before it have not seen them: the next pass asks them again (`recheck` on their
   * hook-decision events), until one pass changes nothing. Hooks that never agree (each rewriting what the
   * other let through) end as a deny after MAX_ARGUMENT_PASSES passes: nothing unchecked runs.
   */
  private async before(payload: BeforeToolCallPayload, options: BeforeOptions): Promise<BeforeOutcome> {
    const trace = this.started("beforeToolCall", payload);
    const providers = this.with("beforeToolCall");
    const passed = new ArgumentsPassed(providers.length);
    let args = payload.call.args;
    for (let pass = 1; pass <= MAX_ARGUMENT_PASSES; pass++) {
      const recheck = options.recheck === true || pass > 1;
      for (let index = 0; index < providers.length; index++) {
        if (passed.saw(index, args)) continue;
        // The loop's payload itself while the arguments are still its own (no copy per hook).
        const current = args === payload.call.args ? payload : { ...payload, call: { ...payload.call, args } };
        const step = await this.beforeStep(providers[index], current, trace, options, recheck);
        if (step.kind !== "proceed") return this.toolVerdict("beforeToolCall", payload, step, trace);
        args = step.args;
        passed.let(index, args);
      }
      if (passed.byEveryone(args)) return this.toolVerdict("beforeToolCall", payload, { kind: "proceed", args }, trace);
    }
    return this.toolVerdict(
      "beforeToolCall",
      payload,
      {
        kind: "deny",
        reason: `the beforeToolCall hooks kept rewriting the arguments: none of ${MAX_ARGUMENT_PASSES} passes let one version of them through every hook`,
      },
      trace,
    );
  }

  /** One beforeToolCall hook's decision on `current`: proceed (with the arguments it let through) or a terminal outcome. */
  private async beforeStep(
    provider: HookProvider,
    current: BeforeToolCallPayload,
    trace: Trace,
    options: BeforeOptions,
    recheck: boolean,
  ): Promise<BeforeOutcome> {
    const { id: callId, args } = current.call;
    let decision;
    try {
      decision = await provider.call("beforeToolCall", current);
      refuseForProviderCall(current, provider.name, decision);
    } catch (error) {
      const failure = this.fail(provider, "beforeToolCall", callId, error, trace, recheck);
      if (failure.policy === "fail-open") return { kind: "proceed", args };
      if (failure.policy === "abort-run") return { kind: "abort", reason: failure.reason, errorCode: failure.errorCode };
      return { kind: "blocked", error: failure.error };
    }
    this.decided(provider, "beforeToolCall", callId, decision, trace, recheck);
    if (!decision) return { kind: "proceed", args };
    if (decision.action === "proceed") return { kind: "proceed", args: decision.args ?? args };
    if (decision.action === "skip" || decision.action === "deny") trace.asked = false; // a later hook's own decision
    if (decision.action === "skip") return { kind: "skip", result: decision.result, reason: decision.reason };
    if (decision.action === "deny") return { kind: "deny", reason: decision.reason };
    if (decision.action === "ask") {
      trace.asked = true;
      const approvals = this.options.approvals;
      if (!approvals) return { kind: "deny", reason: `${provider.name} asked for an approval and nobody can answer here` };
      const approval = await approvals.ask({
        callId,
        name: current.call.name,
        args,
        reason: decision.reason,
        script: provider.name,
        ...(decision.timeoutMs !== undefined ? { timeoutMs: decision.timeoutMs } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (approval.decision === "approved") return { kind: "proceed", args: approval.args };
      const why =
        approval.decision === "timeout" ? approval.reason : `rejected by the reviewer${approval.reason ? `: ${approval.reason}` : ""}`;
      return { kind: "deny", reason: why };
    }
    return { kind: "abort", reason: `${provider.name}: ${decision.reason}` };
  }

  /**
   * Before the first inference: the prompt the model gets, or a denial (the run ends aborted, no model call).
   * Its verdict is reported as call `run`, attempt 1.
   */
  async beforeRun(payload: BeforeRunPayload): Promise<RunStartOutcome> {
    return this.evaluated(
      "beforeRun",
      payload,
      { callId: RUN_CALL_ID, attempt: 1 },
      (trace) => this.runStart(payload, trace),
      (outcome, trace) => runHookVerdict(payload.prompt, outcome, trace),
    );
  }

  private async runStart(payload: BeforeRunPayload, trace: Trace): Promise<RunStartOutcome> {
    let prompt = payload.prompt;
    for (const provider of this.with("beforeRun")) {
      let decision;
      try {
        decision = await provider.call("beforeRun", { ...payload, prompt });
      } catch (error) {
        const failure = this.fail(provider, "beforeRun", undefined, error, trace);
        if (failure.policy === "fail-open") continue;
        // The guarded action is the run itself: fail-closed and abort-run both keep it from starting.
        const reason = failure.policy === "abort-run" ? failure.reason : failure.error.message;
        return {
          kind: "deny",
          reason,
          errorCode: failure.policy === "abort-run" ? failure.errorCode : failure.error.code,
        };
      }
      this.decided(provider, "beforeRun", undefined, decision, trace);
      if (!decision) continue;
      if (decision.action === "deny") return { kind: "deny", reason: `${provider.name}: ${decision.reason}`, errorCode: "RUN_DENIED" };
      if (decision.prompt !== undefined) prompt = decision.prompt;
    }
    return { kind: "proceed", prompt };
  }

  /**
   * When the model gave a final answer: finish, send the model on with a message, or end the run. Its verdict
   * is reported as call `run`, attempt `continues + 1` (the first check of a run is attempt 1).
   */
  async beforeFinish(payload: BeforeFinishPayload): Promise<FinishOutcome> {
    return this.evaluated(
      "beforeFinish",
      payload,
      { callId: RUN_CALL_ID, attempt: payload.continues + 1 },
      (trace) => this.finishCheck(payload, trace),
      (outcome, trace) => runHookVerdict(undefined, outcome, trace),
    );
  }

  private async finishCheck(payload: BeforeFinishPayload, trace: Trace): Promise<FinishOutcome> {
    for (const provider of this.with("beforeFinish")) {
      let decision;
      try {
        decision = await provider.call("beforeFinish", payload);
      } catch (error) {
        const failure = this.fail(provider, "beforeFinish", undefined, error, trace);
        if (failure.policy === "fail-open") continue;
        if (failure.policy === "abort-run") return { kind: "abort", reason: failure.reason, errorCode: failure.errorCode };
        // fail-closed: an answer the policy could not check is not delivered as completed.
        return { kind: "failed", reason: failure.error.message, errorCode: failure.error.code };
      }
      this.decided(provider, "beforeFinish", undefined, decision, trace);
      if (!decision) continue;
      if (decision.action === "continue") return { kind: "continue", message: decision.message, script: provider.name };
      return { kind: "abort", reason: `${provider.name}: ${decision.reason}` };
    }
    return { kind: "finish" };
  }

  private async after(payload: AfterToolCallPayload): Promise<AfterOutcome> {
    const trace = this.started("afterToolCall", payload);
    let { result, error } = payload;
    for (const provider of this.with("afterToolCall")) {
      let decision;
      try {
        // The loop's payload itself until a hook changes the result or the error (no copy per hook).
        const current = result === payload.result && error === payload.error ? payload : { ...payload, result, error };
        decision = await provider.call("afterToolCall", current);
        refuseForProviderCall(payload, provider.name, decision);
      } catch (failure) {
        const outcome = this.fail(provider, "afterToolCall", payload.call.id, failure, trace);
        if (outcome.policy === "fail-open") continue;
        if (outcome.policy === "abort-run")
          return this.toolVerdict("afterToolCall", payload, { kind: "abort", reason: outcome.reason, errorCode: outcome.errorCode }, trace);
        // fail-closed: the result is withheld and the model sees an error instead
        const withheld = { ...outcome.error, message: `result withheld: ${outcome.error.message}` };
        return this.toolVerdict("afterToolCall", payload, { kind: "apply", result: undefined, error: withheld, withheld: true }, trace);
      }
      this.decided(provider, "afterToolCall", payload.call.id, decision, trace);
      if (!decision) continue;
      if ("action" in decision)
        return this.toolVerdict("afterToolCall", payload, { kind: "abort", reason: `${provider.name}: ${decision.reason}` }, trace);
      if (decision.result !== undefined) result = decision.result;
      if (typeof decision.error === "string") error = { message: decision.error };
      else if (decision.error === null) error = undefined;
    }
    return this.toolVerdict("afterToolCall", payload, { kind: "apply", result, error }, trace);
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

  /** The providers that have `hook`, in load order (a provider's hooks are fixed when it is made). */
  private with(hook: HookName): HookProvider[] {
    let providers = this.byHook.get(hook);
    if (providers === undefined) this.byHook.set(hook, (providers = this.providers.filter((p) => p.has(hook))));
    return providers;
  }
  private readonly byHook = new Map<HookName, HookProvider[]>();

  private decided(
    provider: HookProvider,
    hook: HookName,
    callId: string | undefined,
    decision: unknown,
    trace: Trace,
    recheck = false,
  ): void {
    this.emitDecision(provider, hook, callId, decision === undefined ? { action: "none" } : (decision as JsonObject), trace, recheck);
  }

  private emitDecision(
    provider: HookProvider,
    hook: HookName,
    callId: string | undefined,
    decision: JsonObject,
    trace: Trace,
    recheck: boolean,
  ): void {
    trace.decision = decision;
    // Built field by field (in the event's key order): two of these per tool call, and each spread of an optional
    // field costs an object and a generic copy.
    const body: HookDecisionBody = { type: "hook-decision", hook, script: provider.name } as HookDecisionBody;
    if (callId !== undefined) body.callId = callId;
    body.decision = decision;
    if (provider.version !== undefined) body.version = provider.version;
    if (provider.bundleHash !== undefined) body.bundleHash = provider.bundleHash;
    if (this.options.shadow) body.shadow = true;
    if (recheck) body.recheck = true;
    this.events.emit(body);
  }

  private fail(
    provider: HookProvider,
    hook: HookName,
    callId: string | undefined,
    error: unknown,
    trace: Trace,
    recheck = false,
  ): HookFailure {
    const code = error instanceof HookboxError ? error.code : "SCRIPT_ERROR";
    const raw = error instanceof Error ? error.message : String(error);
    const message = raw.includes(hook) ? raw : `${provider.name}: ${hook} failed: ${raw}`;
    const policy = provider.onHookError;
    this.emitDecision(provider, hook, callId, { action: "error", code, message, policy }, trace, recheck);
    if (policy === "fail-open") {
      if (!this.options.shadow) this.events.emit({ type: "log", script: provider.name, level: "warn", message: `fail-open: ${message}` });
      return { policy };
    }
    trace.failed = true;
    if (policy === "abort-run") return { policy, reason: message, errorCode: code };
    return { policy, error: { message, code } };
  }
}
