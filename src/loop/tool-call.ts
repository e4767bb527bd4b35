import { HookboxError } from "../errors.js";
import type {
  AfterToolCallPayload,
  BeforeToolCallPayload,
  CodeOrigin,
  CommonContext,
  OnToolErrorPayload,
  ToolCallRef,
  ToolContext,
  ToolErrorInfo,
} from "../contracts/context.js";
import type { EventBody } from "../events/types.js";
import { canonicalJson, type Json, type JsonObject } from "../turns/json.js";
import type { Block } from "../turns/turn.js";
import { BlockMetadataKeys, PayloadKeys } from "../turns/keys.gen.js";
import type { ErrorPolicy, RunPersistence } from "../host/types.js";
import type { EventLog } from "./event-log.js";
import type { AfterOutcome, BeforeOutcome, HookChain } from "./hook-chain.js";
import type { RetryBudget } from "./retry-budget.js";
import type { RegisteredTool, ToolRegistry } from "./tool-registry.js";
import { abortWatchers, sleep } from "./abortable.js";
import { withRunContext } from "./ambient.js";
import { newId } from "./ids.js";

export interface PendingCall {
  /** The call's tool_call block: unique in the session, unlike the model's call id. */
  blockId: string;
  id: string;
  name: string;
  args: JsonObject;
  /** The model's argument text when it was not a JSON object (`args` is then `{}`): the call fails with TOOL_ARGS. */
  rawArgs?: string;
}

export type CallOutcome =
  | { kind: "result"; block: Block; failed: boolean }
  | { kind: "restart"; callId: string; blockId: string; suffix: string; item?: Json }
  | { kind: "abort"; reason: string; errorCode?: string };

export interface CallServices {
  registry: ToolRegistry;
  hooks: HookChain;
  events: EventLog;
  budget: RetryBudget;
  errorPolicy: ErrorPolicy;
  toolTimeoutMs?: number;
  defaultBackoffMs: number;
  signal: AbortSignal;
  /** The run's context now: a fresh object on every call, which the caller extends into a payload or ctx. */
  context(): CommonContext;
  journal?: RunPersistence["journal"];
  /** The run's ownership check before a handler runs (RunPersistence.fence). */
  fence?: () => Promise<void>;
  maxToolResultBytes?: number;
}

/** What one attempt produced: the handler's result or why it failed. */
type AttemptOutcome = { result?: Json; error?: ToolErrorInfo };

const RESTART_PREFIX = "context_restart_";

type ToolFinishedBody = Extract<EventBody, { type: "tool-finished" }>;

/**
 * One tool call's whole life: beforeToolCall -> validated execution under a timeout -> onToolError and
 * bounded retries -> afterToolCall -> a tool_use block (or a context restart, or a run abort).
 */
export async function executeToolCall(call: PendingCall, services: CallServices): Promise<CallOutcome> {
  const committed = services.journal?.lookup(call.blockId);
  if (committed) return { kind: "result", block: committed, failed: committed.payload[PayloadKeys.error] !== undefined };

  const { events, hooks, registry } = services;
  const tool = registry.get(call.name);
  const origin = tool?.origin ?? "host";
  // Unparsable arguments stay with the call until a hook (or an approver) gives it arguments of its own.
  let rawArgs = call.rawArgs;
  // A chain that would only pass the call through (no beforeToolCall hook, nobody recording) is not evaluated.
  const first = hooks.passesThrough("beforeToolCall")
    ? ({ kind: "proceed", args: call.args } as const)
    : await guard(services, toolCallRef(call, origin, call.args, rawArgs), 1, false);
  if (first.kind !== "proceed") return guardEnded(call, origin, first);
  let args = first.args;
  if (args !== call.args) rawArgs = undefined;
  let attempt = 1;
  for (;;) {
    const started = Date.now();
    // A call refused before its handler (unknown tool, invalid arguments) never started: only tool-finished.
    const admitted = admitCall(tool, call, args, rawArgs, services.registry);
    if ("tool" in admitted) await services.fence?.();
    if ("tool" in admitted) events.emit({ type: "tool-started", callId: call.id, name: call.name, args, attempt, origin });
    const outcome: AttemptOutcome = "tool" in admitted ? await runOnce(admitted.tool, call, args, attempt, services) : admitted;
    const durationMs = Date.now() - started;
    if (attempt > 1) services.budget.spend(durationMs);
    events.emit(finishedEvent(call, attempt, durationMs, outcome));
    if (services.signal.aborted) throw services.signal.reason;

    let error = outcome.error;
    if (error) {
      const failed = services.context() as OnToolErrorPayload;
      failed.phase = "onToolError";
      failed.call = toolCallRef(call, origin, args, rawArgs);
      failed.attempt = attempt;
      failed.error = error;
      const decision = await hooks.onToolError(failed);
      if (decision.kind === "abort") return decision;
      const wantsRetry = decision.kind === "retry" || (decision.kind === "default" && services.errorPolicy === "retry");
      if (decision.kind === "default" && services.errorPolicy === "abort") {
        return { kind: "abort", reason: `tool ${call.name} failed and the error policy is abort: ${error.message}`, errorCode: error.code };
      }
      if (wantsRetry) {
        const backoffMs = decision.kind === "retry" ? (decision.backoffMs ?? services.defaultBackoffMs) : services.defaultBackoffMs;
        const refused = services.budget.check(attempt, backoffMs);
        if (!refused) {
          services.budget.take();
          events.emit({ type: "tool-retry", callId: call.id, attempt: attempt + 1, backoffMs });
          const waitStart = Date.now();
          await sleep(backoffMs, services.signal);
          services.budget.spend(Date.now() - waitStart);
          attempt += 1;
          // Arguments a retry gives replace the model's unparsable text.
          if (decision.kind === "retry" && decision.args) rawArgs = undefined;
          // Arguments a retry brings have passed no guard yet: the whole beforeToolCall chain checks them.
          if (decision.kind === "retry" && decision.args && canonicalJson(decision.args) !== canonicalJson(args)) {
            const checked = await guard(services, toolCallRef(call, origin, decision.args, rawArgs), attempt, true);
            if (checked.kind !== "proceed") return guardEnded(call, origin, checked);
            args = checked.args;
          }
          continue;
        }
        error = { message: `${error.message} (no retry: retry bound reached: ${refused})`, code: "RETRY_BUDGET" };
      } else if (decision.kind === "fail" && decision.error) {
        error = { ...error, message: decision.error };
      }
    }

    const result = outcome.result !== undefined && !error ? outcome.result : undefined;
    let after: AfterOutcome;
    if (hooks.passesThrough("afterToolCall")) after = { kind: "apply", result, error };
    else {
      const payload = services.context() as AfterToolCallPayload;
      payload.phase = "afterToolCall";
      payload.call = toolCallRef(call, origin, args, rawArgs);
      payload.attempt = attempt;
      payload.durationMs = durationMs;
      if (result !== undefined) payload.result = result;
      if (error) payload.error = error;
      after = await hooks.afterToolCall(payload);
    }
    if (after.kind === "abort") return after;
    const restart = asRestart(after.result);
    if (restart && !after.error) return { kind: "restart", callId: call.id, blockId: call.blockId, ...restart };
    return finished(call, origin, after.result, after.error);
  }
}

// Payloads are built field by field on a fresh context() (its key order, then the hook's own fields): several per
// tool call, where each spread would copy the whole context once more.

/** The call as hooks see it. */
function toolCallRef(call: PendingCall, origin: CodeOrigin, args: JsonObject, rawArgs: string | undefined): ToolCallRef {
  const ref: ToolCallRef = { id: call.id, name: call.name, args, origin };
  if (rawArgs !== undefined) ref.rawArgs = rawArgs;
  return ref;
}

/** The beforeToolCall chain on the call: proceed with the arguments every hook let through, or how the call ends. */
function guard(services: CallServices, ref: ToolCallRef, attempt: number, recheck: boolean): Promise<BeforeOutcome> {
  const payload = services.context() as BeforeToolCallPayload;
  payload.phase = "beforeToolCall";
  payload.call = ref;
  payload.attempt = attempt;
  return services.hooks.beforeToolCall(payload, { signal: services.signal, recheck });
}

/** How a call ends that its beforeToolCall chain did not let through. */
function guardEnded(call: PendingCall, origin: string, before: Exclude<BeforeOutcome, { kind: "proceed" }>): CallOutcome {
  if (before.kind === "abort") return before;
  if (before.kind === "skip") return finished(call, origin, before.result, undefined);
  if (before.kind === "deny") return finished(call, origin, undefined, { message: `denied by policy: ${before.reason}`, code: "DENIED" });
  return finished(call, origin, undefined, before.error);
}

/** The tool to run, or why the call is refused before its handler starts. */
function admitCall(
  tool: RegisteredTool | undefined,
  call: PendingCall,
  args: JsonObject,
  rawArgs: string | undefined,
  registry: ToolRegistry,
): { tool: RegisteredTool } | { error: ToolErrorInfo } {
  if (!tool) return { error: { message: `unknown tool "${call.name}"`, code: "UNKNOWN_TOOL" } };
  if (rawArgs !== undefined) {
    const shown = rawArgs.length > 200 ? `${rawArgs.slice(0, 200)}...` : rawArgs;
    return { error: { message: `arguments for ${call.name} are not a JSON object: ${shown}`, code: "TOOL_ARGS" } };
  }
  const invalid = registry.checkArgs(tool, args);
  if (invalid) return { error: { message: invalid, code: "TOOL_ARGS" } };
  return { tool };
}

async function runOnce(
  tool: RegisteredTool,
  call: PendingCall,
  args: JsonObject,
  attempt: number,
  services: CallServices,
): Promise<AttemptOutcome> {
  const ctx = services.context() as ToolContext;
  ctx.toolName = tool.name;
  ctx.callId = call.id;
  ctx.callName = call.name;
  ctx.attempt = attempt;
  const timeoutMs = tool.timeoutMs ?? services.toolTimeoutMs;
  // The handler's signal aborts when the run does or the call times out, and the call stops waiting for it then.
  const controller = new AbortController();
  const watchers = abortWatchers(services.signal);
  let stop: ((reason: unknown) => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const result = await new Promise<Json>((resolve, reject) => {
      stop = (reason) => {
        controller.abort(reason);
        reject(controller.signal.reason);
      };
      watchers.add(stop);
      if (timeoutMs)
        timer = setTimeout(() => stop!(new HookboxError("TOOL_TIMEOUT", `tool ${tool.name} timed out after ${timeoutMs} ms`)), timeoutMs);
      withRunContext(ctx, () => tool.invoke(args, ctx, controller.signal, { maxResultBytes: services.maxToolResultBytes })).then(
        resolve,
        reject,
      );
    });
    if (result === undefined) return { result: null };
    return { result };
  } catch (error) {
    if (services.signal.aborted) throw services.signal.reason;
    // Over a run budget is the run's failure, not a tool error the model could retry around.
    if (error instanceof HookboxError && error.code === "RUN_BUDGET") throw error;
    return { error: toErrorInfo(error) };
  } finally {
    clearTimeout(timer);
    if (stop !== undefined) watchers.delete(stop);
  }
}

/** tool-finished: the attempt's result or error after the call's fields (an event body per attempt, without a spread). */
function finishedEvent(call: PendingCall, attempt: number, durationMs: number, outcome: AttemptOutcome): ToolFinishedBody {
  const body: ToolFinishedBody = { type: "tool-finished", callId: call.id, name: call.name, attempt, durationMs };
  if ("result" in outcome) body.result = outcome.result;
  if ("error" in outcome) body.error = outcome.error;
  return body;
}

function toErrorInfo(error: unknown): ToolErrorInfo {
  if (error instanceof HookboxError) return { message: error.message, code: error.code };
  if (error instanceof Error) return { message: error.message, code: "TOOL_ERROR" };
  return { message: String(error), code: "TOOL_ERROR" };
}

function asRestart(result: Json | undefined): { suffix: string; item?: Json } | undefined {
  if (!result || typeof result !== "object" || Array.isArray(result)) return undefined;
  const type = result.type;
  if (typeof type !== "string" || !type.startsWith(RESTART_PREFIX) || type.length === RESTART_PREFIX.length) return undefined;
  return { suffix: type.slice(RESTART_PREFIX.length), item: result.enhanced_context_item };
}

function finished(call: PendingCall, origin: string, result: Json | undefined, error: ToolErrorInfo | undefined): CallOutcome {
  const payload: JsonObject = { [PayloadKeys.id]: call.id, [PayloadKeys.name]: call.name };
  if (error) payload[PayloadKeys.error] = error.code ? { message: error.message, code: error.code } : { message: error.message };
  else payload[PayloadKeys.result] = result ?? null;
  const metadata: JsonObject = { [BlockMetadataKeys.origin.id]: origin };
  return { kind: "result", block: { id: newId("blk"), kind: "tool_use", role: "tool", payload, metadata }, failed: !!error };
}
