import type { LanguageModelV4 } from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import type { CommonContext, Tags, UserContext } from "../contracts/context.js";
import type { ErrorPolicy, RetryBounds, RunPersistence, RunHandle, RunResult, SnapshotPhase, RunBudgets } from "../host/types.js";
import type { Turn } from "../turns/turn.js";
import type { ModelSettings, UserContextToModel } from "../engine/model-settings.js";
import { TurnDataKeys, TurnMetadataKeys, type FinishReason, type ToolDefinitions } from "../turns/keys.gen.js";
import { setSharedValue, type SharedValue } from "../turns/shared-value.js";
import { EventLog } from "./event-log.js";
import { HookChain } from "./hook-chain.js";
import type { HookProvider } from "./hook-provider.js";
import { ShadowHooks } from "./shadow-hooks.js";
import { composeMiddleware, type Middleware } from "./middleware-chain.js";
import { engineStep, userContextMiddleware } from "./engine-step.js";
import { RetryBudget } from "./retry-budget.js";
import { Stepper } from "./stepper.js";
import { executeToolCall, type CallServices } from "./tool-call.js";
import { describeCall, pendingCalls } from "./pending-calls.js";
import { answerText, observeProviderCalls, providerCalls } from "./provider-calls.js";
import type { ProviderTools } from "../engine/infer.js";
import type { ToolRegistry } from "./tool-registry.js";
import { applyRestart, type RestartHandlers } from "./context-restart.js";
import { runBatch } from "./tool-batch.js";
import { raceAbort } from "./abortable.js";
import { RunController } from "./run-controller.js";
import { UsageMeter, type UsageLimits } from "./usage-meter.js";
import type { RunUsage } from "../host/usage.js";
import { noopRunTrace, type RunTrace } from "../telemetry/run-trace.js";
import { traceToolCall } from "../telemetry/traced-calls.js";
import { Approvals } from "./approvals.js";
import { FinishGuard, guardRunStart, type Ending } from "./run-hooks.js";
import { DEFAULT_RUN_BUDGETS, RunBudgetMeter } from "./run-budget.js";
import { ContextWindow, contextPolicy, type ContextPolicy, type Summarizer } from "./context-window.js";

export interface LoopLimits {
  maxIterations: number;
  maxParallelTools: number;
  toolTimeoutMs?: number;
  errorPolicy: ErrorPolicy;
  retry: RetryBounds;
  maxContextRestarts: number;
  /** Consecutive failed tool results before the run fails (a context restart resets the count). */
  maxConsecutiveToolErrors: number;
  /** Backoff for retries the error policy asks for (hooks give their own). */
  defaultBackoffMs: number;
  /** Retries per model for 429, 5xx and network errors (default 2). */
  modelRetries: number;
  /** How long an `ask` waits for an answer (a hook may ask for less, never more); then it is a rejection. */
  approvalTimeoutMs: number;
  /** How many more inferences beforeFinish may ask for in one run. */
  maxFinishContinues: number;
  /** Bytes and tool calls the run may produce (default DEFAULT_RUN_BUDGETS). */
  budgets?: RunBudgets;
}

/** What the loop needs from the sandbox and the host, built once the event log exists (logs go into it). */
export interface RunAccounting {
  usage: UsageMeter;
  trace: RunTrace;
}

export interface LoopComponents {
  registry: ToolRegistry;
  /** `registry.turnDefinitions()` checked and frozen once for all the runs of a runtime (without it: each run's own copy). */
  toolDefinitions?: SharedValue<ToolDefinitions>;
  middleware: Middleware[];
  hooks: HookProvider[];
  /** Shadow hooks (shadow-hooks.ts): run beside `hooks` on the same payloads, never enforced. */
  shadow?: { hooks: HookProvider[]; waitMs: number };
  close?(): Promise<void>;
  /** CPU the run's sandboxed callbacks used so far, ms. */
  sandboxCpuMs?(): number;
  /** Summarizes what leaves the model's context, when the context policy asks for summaries (the tenant's guard model). */
  summarizer?: Summarizer;
}

export interface LoopOptions {
  model: LanguageModelV4;
  /** Answers once the model's retries are spent. */
  fallbackModel?: LanguageModelV4;
  /** Tools the provider runs itself (web search, code execution): hooks observe their calls, the host never runs them. */
  providerTools?: ProviderTools;
  stream?: boolean;
  /** `run`: the run's usage meter and trace, for components that spend tokens too (a script's guard-model calls). */
  components(events: EventLog, run: RunAccounting): Promise<LoopComponents>;
  limits: LoopLimits;
  ids: { runId: string; sessionId: string; inferenceId: string; traceId: string; turnId: string };
  prompt: string;
  userContext: UserContext;
  /** What of the user context the model is shown (default "request": the original request only). */
  userContextToModel?: UserContextToModel;
  /** The run's instructions and model settings, put in the turn's metadata when the run starts. */
  system?: string;
  modelSettings?: ModelSettings;
  tags: Tags;
  deadlineMs?: number;
  step: { enabled: boolean; pauseTimeoutMs: number };
  restartHandlers?: RestartHandlers;
  persistence?: RunPersistence;
  /** maxTokens, maxCostUsd and the pricing that turns tokens into cost. */
  usage?: UsageLimits;
  /** The run's trace (spans); the no-op one when absent. `ids.traceId` must be its traceId. */
  trace?: RunTrace;
  /** Resume: events continue at this seq; iterations already done, and what they used. */
  resume?: { nextSeq: number; iterations: number; usage?: RunUsage };
  /** The model's context budget and policy (default: DEFAULT_CONTEXT_TOKENS, no summaries). */
  context?: ContextPolicy;
}

/** Starts the tool loop on `turn` and returns its handle at once. */
export function startLoop(initial: Turn, options: LoopOptions): RunHandle {
  const persistence = options.persistence;
  const meter = new RunBudgetMeter(options.limits.budgets ?? DEFAULT_RUN_BUDGETS, initial);
  const events = new EventLog(
    { sessionId: options.ids.sessionId, inferenceId: options.ids.inferenceId },
    {
      admit: (event, json) => meter.admit(event, json),
      sink: (event, json) => persistence?.onEvent(event, json),
      liveSink: (event) => persistence?.onLiveEvent?.(event),
      firstSeq: options.resume?.nextSeq ?? 1,
    },
  );
  const controller = new RunController(options.ids, events);
  meter.onOverrun = (error) => controller.fail(error);
  const stepper = new Stepper(options.step.enabled, options.step.pauseTimeoutMs, events, controller.signal);
  controller.attachStepper(stepper);
  controller.finishWith(runLoop(initial, options, { events, run: controller, stepper, meter }));
  if (options.deadlineMs !== undefined) controller.enforceDeadline(options.deadlineMs);
  return controller;
}

interface RunParts {
  events: EventLog;
  run: RunController;
  stepper: Stepper;
  meter: RunBudgetMeter;
}

async function runLoop(initial: Turn, options: LoopOptions, { events, run, stepper, meter }: RunParts): Promise<RunResult> {
  const { limits, ids } = options;
  const signal = run.signal;
  // Blocks are immutable once in a turn (src/turns/block-json.ts): the run shares them with its history and
  // owns only its block list and its metadata and data bags.
  let turn: Turn = { ...initial, blocks: initial.blocks.slice(), metadata: { ...initial.metadata }, data: { ...initial.data } };
  let iterations = options.resume?.iterations ?? 0;
  let components: LoopComponents | undefined;
  const trace = options.trace ?? noopRunTrace({});
  const usageMeter = new UsageMeter(options.usage ?? {}, options.resume?.usage);
  /** Why the run's last model answer stopped (none yet in this process, or a middleware answered). */
  let lastFinishReason: FinishReason | undefined;
  const budget = new RetryBudget(limits.retry);
  let shadow: ShadowHooks | undefined;
  const snapshot = async (phase: SnapshotPhase) => {
    // An over-budget turn is never committed: the last snapshot within budget stays the session's history.
    meter.check();
    await options.persistence?.onSnapshot(phase, turn);
  };
  // A fresh object per call (callers add their own fields to it), built field by field in its key order: this runs
  // several times per tool call, and a spread of an optional field costs an object and a generic copy.
  const context = (): CommonContext => {
    const ctx: CommonContext = {
      sessionId: ids.sessionId,
      inferenceId: ids.inferenceId,
      traceId: ids.traceId,
      turnId: ids.turnId,
      timestampMs: Date.now(),
      tags: options.tags,
      userContext: options.userContext,
    } as CommonContext;
    if (options.deadlineMs !== undefined) ctx.deadlineMs = options.deadlineMs;
    ctx.budget = usageMeter.budget(iterations, limits.maxIterations, budget.retriesLeft(), options.deadlineMs);
    return ctx;
  };

  const finish = async (ending: Ending): Promise<RunResult> => {
    await shadow?.settle(components?.shadow?.waitMs ?? 0);
    try {
      await components?.close?.();
    } catch {
      /* closing a sandbox run cannot change how the run ended */
    }
    const sandboxCpuMs = components?.sandboxCpuMs?.();
    const usage = { ...usageMeter.total, ...(sandboxCpuMs !== undefined ? { sandboxCpuMs: Math.round(sandboxCpuMs * 1000) / 1000 } : {}) };
    const completed = ending.status === "completed";
    // The answer is the last inference's text only: a refused or empty last answer never shows an earlier one.
    const text = ending.text ?? (completed ? answerText(turn) : undefined);
    const finishReason = completed ? lastFinishReason : undefined;
    const result: RunResult = {
      ...ending,
      ...(text !== undefined ? { text } : {}),
      ...(finishReason !== undefined ? { finishReason } : {}),
      turn,
      iterations,
    };
    try {
      await snapshot("final");
    } catch (error) {
      if (ending.status === "completed") {
        const code = error instanceof HookboxError ? error.code : "STORE";
        return finish({
          status: "failed",
          reason: code === "STORE" ? `store: ${(error as Error).message}` : (error as Error).message,
          errorCode: code,
        });
      }
    }
    events.emit({
      type: "run-finished",
      status: result.status,
      iterations,
      ...(result.reason !== undefined ? { reason: result.reason } : {}),
      ...(result.errorCode !== undefined ? { errorCode: result.errorCode } : {}),
      ...(result.text !== undefined ? { text: result.text } : {}),
      ...(finishReason !== undefined ? { finishReason } : {}),
      usage,
    });
    trace.end({ status: result.status, errorCode: result.errorCode, reason: result.reason, usage });
    // The run is over once its final event is committed: a caller of wait() may start the session's next run.
    await options.persistence?.settled?.();
    return result;
  };

  try {
    if (!options.resume) events.emit({ type: "run-started", prompt: options.prompt, runId: ids.runId });
    components = await options.components(events, { usage: usageMeter, trace });
    const { registry } = components;
    TurnDataKeys.toolConfig.set(turn.data, {
      maxIterations: limits.maxIterations,
      maxParallelTools: limits.maxParallelTools,
      errorPolicy: limits.errorPolicy,
      ...(limits.toolTimeoutMs !== undefined ? { toolTimeoutMs: limits.toolTimeoutMs } : {}),
    });
    if (components.toolDefinitions) setSharedValue(TurnDataKeys.toolDefinitions, turn.data, components.toolDefinitions);
    else TurnDataKeys.toolDefinitions.set(turn.data, registry.turnDefinitions());
    TurnMetadataKeys.sessionId.set(turn.metadata, ids.sessionId);
    TurnMetadataKeys.inferenceId.set(turn.metadata, ids.inferenceId);
    TurnMetadataKeys.traceId.set(turn.metadata, ids.traceId);
    TurnMetadataKeys.turnId.set(turn.metadata, ids.turnId);
    // A resumed run goes on with its snapshot's instructions (a middleware may have changed them); a new run
    // starts from its own, never from the previous run's left in the history's metadata.
    if (!options.resume) setRunInstructions(turn, options);

    const approvals = new Approvals({
      events,
      signal,
      timeoutMs: limits.approvalTimeoutMs,
      checkArgs: (name, args) => {
        const tool = registry.get(name);
        return tool ? registry.argsIssue(tool, args) : undefined;
      },
    });
    run.attachApprovals(approvals);
    const onVerdict = options.persistence?.onHookCall;
    if (components.shadow?.hooks.length) shadow = new ShadowHooks(components.shadow.hooks, events, onVerdict);
    const hooks = new HookChain(components.hooks, events, {
      approvals,
      ...(onVerdict ? { onVerdict } : {}),
      ...(shadow ? { shadowHooks: shadow } : {}),
    });
    const finishGuard = new FinishGuard(hooks, events, limits);
    const contextWindow = new ContextWindow(options.context ?? contextPolicy(undefined), components.summarizer);
    if (!options.resume) {
      const denied = await guardRunStart(turn, hooks, { ...context(), prompt: options.prompt, userContext: options.userContext });
      if (denied) return finish(denied);
    }
    /** What the engine reported for the current inference (none when a middleware answered without a model call). */
    let inferenceUsage: RunUsage | undefined;
    let inferenceFinish: FinishReason | undefined;
    const chain = composeMiddleware(
      [...components.middleware, userContextMiddleware(options.userContext, options.userContextToModel)],
      engineStep({
        models: options.fallbackModel ? [options.model, options.fallbackModel] : [options.model],
        retries: limits.modelRetries,
        tools: () => registry.definitions(),
        ...(options.providerTools ? { providerTools: options.providerTools } : {}),
        signal,
        stream: options.stream,
        onTextDelta: (delta) => events.live({ type: "text-delta", iteration: iterations, delta }),
        deadlineMs: options.deadlineMs,
        trace,
        onRetry: (retry) => events.emit({ type: "inference-retry", iteration: iterations, ...retry }),
        onAnswer: (answer) => {
          contextWindow.calibrate(answer.usage.inputTokens);
          inferenceUsage = usageMeter.record(answer.model.modelId, answer.usage);
          inferenceFinish = answer.finishReason;
        },
      }),
      context,
    );
    let restarts = 0;
    let consecutiveErrors = 0;

    for (;;) {
      let pending = pendingCalls(turn);
      if (pending.length === 0) {
        // Tokens spent since the last inference (a script's guard-model calls) count before another one starts.
        const spent = usageMeter.exceeded();
        if (spent) return finish({ status: "failed", reason: spent, errorCode: "BUDGET" });
        if (iterations >= limits.maxIterations) {
          return finish({
            status: "failed",
            reason: `reached the iteration limit (${limits.maxIterations}) with the model still calling tools`,
            errorCode: "MAX_ITERATIONS",
          });
        }
        iterations += 1;
        // Past the context budget the oldest messages leave the turn (and the stored history the next run reads).
        const fitted = await raceAbort(contextWindow.fit(turn, signal), signal);
        turn = fitted.turn;
        if (fitted.trim) events.emit({ type: "context-trimmed", iteration: iterations, ...fitted.trim });
        await snapshot("pre_inference");
        events.emit({ type: "inference-started", iteration: iterations });
        inferenceUsage = undefined;
        inferenceFinish = undefined;
        const asked = turn;
        turn = await raceAbort(chain(turn), signal);
        pending = pendingCalls(turn);
        if (pending.length > meter.budgets.maxToolCallsPerInference) {
          turn = asked; // the over-budget answer is not kept: no call of it runs, and no later run continues it
          meter.checkToolCalls(pending.length);
        }
        meter.measureTurn(turn);
        const text = answerText(turn);
        const observed = providerCalls(turn);
        lastFinishReason = inferenceFinish;
        // A middleware that answers without calling next() made no model call: it used nothing.
        const usage = inferenceUsage ?? { inputTokens: 0, outputTokens: 0, costUsd: 0 };
        events.emit({
          type: "inference-finished",
          iteration: iterations,
          ...(text !== undefined ? { text } : {}),
          toolCalls: [
            ...observed.map((call) => ({ ...describeCall(call), providerExecuted: true as const })),
            ...pending.map(describeCall),
          ],
          ...(inferenceFinish !== undefined ? { finishReason: inferenceFinish } : {}),
          usage,
        });
        await snapshot("post_inference");
        const over = usageMeter.exceeded();
        if (over) return finish({ status: "failed", reason: over, errorCode: "BUDGET" });
        const stopped = await observeProviderCalls(observed, { hooks, events, context });
        if (stopped) return finish(stopped);
        if (pending.length === 0) {
          const verdict = await finishGuard.check(turn, { text: text ?? "", finishReason: inferenceFinish }, iterations, context());
          if (verdict === "continue") continue;
          return finish(verdict);
        }
        await stepper.pause("after_inference", pending);
        if (signal.aborted) throw signal.reason;
      }

      const journal = options.persistence?.journal;
      // One set of services for the batch's calls (runBatch gives them all its one signal).
      let services: CallServices | undefined;
      const servicesFor = (batchSignal: AbortSignal): CallServices =>
        services?.signal === batchSignal
          ? services
          : (services = {
              registry,
              hooks,
              events,
              budget,
              signal: batchSignal,
              context,
              errorPolicy: limits.errorPolicy,
              toolTimeoutMs: limits.toolTimeoutMs,
              defaultBackoffMs: limits.defaultBackoffMs,
              journal,
              ...(options.persistence?.fence ? { fence: () => options.persistence!.fence!() } : {}),
              maxToolResultBytes: meter.budgets.maxToolResultBytes,
            });
      const outcomes = await runBatch(pending, limits.maxParallelTools, signal, async (call, batchSignal) => {
        const outcome = await traceToolCall(trace, call, () => executeToolCall(call, servicesFor(batchSignal)));
        if (outcome.kind === "result") {
          meter.addResultBlock(call.name, outcome.block);
          meter.check();
        }
        // Committed as each call finishes, so a crash mid-batch never re-executes a finished tool.
        if (outcome.kind === "result" && journal && !journal.lookup(call.blockId)) await journal.record(call.blockId, outcome.block);
        return outcome;
      });
      for (const outcome of outcomes) {
        if (outcome.kind === "abort")
          return finish({ status: "aborted", reason: outcome.reason, ...(outcome.errorCode ? { errorCode: outcome.errorCode } : {}) });
        if (outcome.kind === "result") {
          turn.blocks.push(outcome.block);
          consecutiveErrors = outcome.failed ? consecutiveErrors + 1 : 0;
          continue;
        }
        const applied = await applyRestart(turn, outcome, restarts < limits.maxContextRestarts, options.restartHandlers ?? {});
        events.emit({ type: "context-restart", callId: outcome.callId, restartType: outcome.suffix, applied: applied.ok });
        if (applied.ok) {
          restarts += 1;
          consecutiveErrors = 0;
        } else {
          turn.blocks.push(applied.block);
          consecutiveErrors += 1;
        }
      }
      if (consecutiveErrors >= limits.maxConsecutiveToolErrors) {
        return finish({ status: "failed", reason: `${consecutiveErrors} consecutive tool errors`, errorCode: "TOOL_ERROR" });
      }
      await snapshot("post_tools");
      await stepper.pause("after_tools", []);
      if (signal.aborted) throw signal.reason;
    }
  } catch (error) {
    if (signal.aborted && run.deadlinePassed)
      return finish({ status: "failed", reason: (signal.reason as Error).message, errorCode: "DEADLINE" });
    if (signal.aborted && run.failure) return finish({ status: "failed", reason: run.failure.message, errorCode: run.failure.code });
    if (signal.aborted) return finish({ status: "cancelled", reason: run.cancelReason ?? "cancelled" });
    const code = error instanceof HookboxError ? error.code : undefined;
    const message = error instanceof Error ? error.message : String(error);
    return finish({ status: "failed", reason: message, ...(code ? { errorCode: code } : {}) });
  }
}

function setRunInstructions(turn: Turn, options: Pick<LoopOptions, "system" | "modelSettings">): void {
  if (options.system) TurnMetadataKeys.system.set(turn.metadata, options.system);
  else delete turn.metadata[TurnMetadataKeys.system.id];
  if (options.modelSettings && Object.keys(options.modelSettings).length)
    TurnMetadataKeys.modelSettings.set(turn.metadata, options.modelSettings);
  else delete turn.metadata[TurnMetadataKeys.modelSettings.id];
}
