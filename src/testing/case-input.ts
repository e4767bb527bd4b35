import type {
  AfterToolCallPayload,
  Budget,
  CommonContext,
  HookPayload,
  MiddlewareContext,
  ToolContext,
  ToolErrorInfo,
  UserContext,
} from "../contracts/context.js";
import { newId } from "../loop/ids.js";
import { DEFAULT_RETRY_BOUNDS } from "../loop/retry-budget.js";
import type { Json } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";
import { PayloadKeys } from "../turns/keys.gen.js";
import type { Block, Turn } from "../turns/turn.js";
import type { CaseInput } from "./case-schema.js";

/*
 * A case's short input made into what production hands a script: the hook payload, the tool or middleware ctx,
 * the turn. Whatever the input leaves out takes the value a run's first inference would have (ids, budget,
 * timestamp), so a case names only what its policy looks at.
 */

const DEFAULT_MAX_ITERATIONS = 20;

/** The ids and run state every payload and ctx carries. */
function common(input: CaseInput, nowMs: number, ids: RunIdentity): CommonContext {
  const budget: Budget = {
    iteration: 1,
    maxIterations: DEFAULT_MAX_ITERATIONS,
    tokensUsed: 0,
    costUsd: 0,
    retriesLeft: DEFAULT_RETRY_BOUNDS.maxRetriesPerRun,
    ...input.budget,
    ...(input.deadlineMs !== undefined ? { deadlineMs: input.deadlineMs } : {}),
  };
  return {
    ...ids,
    timestampMs: nowMs,
    ...(input.deadlineMs !== undefined ? { deadlineMs: input.deadlineMs } : {}),
    tags: input.tags ?? {},
    userContext: userContext(input, nowMs),
    budget,
  };
}

function userContext(input: CaseInput, nowMs: number): UserContext {
  return { originalUserRequest: input.prompt ?? "", timestampMs: nowMs, ...input.userContext } as UserContext;
}

/** One run's ids: a case's calls share them, as the calls of one run do. */
export interface RunIdentity {
  sessionId: string;
  inferenceId: string;
  traceId: string;
  turnId: string;
}

export function runIdentity(): RunIdentity {
  return { sessionId: newId("ses"), inferenceId: newId("inf"), traceId: newId("trace"), turnId: newId("turn") };
}

function toolError(error: CaseInput["error"]): ToolErrorInfo | undefined {
  if (error === undefined) return undefined;
  return typeof error === "string" ? { message: error } : error;
}

/** The payload of a hook call; `origin` is the tool's (a script's own tool, or the host's). */
export function hookPayload(hook: HookName, input: CaseInput, nowMs: number, ids: RunIdentity, origin: "script" | "host"): HookPayload {
  if (input.payload !== undefined) return input.payload as unknown as HookPayload;
  const base = common(input, nowMs, ids);
  if (hook === "beforeRun") return { ...base, phase: "beforeRun", prompt: input.prompt ?? "", userContext: userContext(input, nowMs) };
  if (hook === "beforeFinish")
    return {
      ...base,
      phase: "beforeFinish",
      text: input.text ?? "",
      ...(input.finishReason ? { finishReason: input.finishReason } : {}),
      iterations: input.iterations ?? 1,
      continues: input.continues ?? 0,
      maxFinishContinues: input.maxFinishContinues ?? 3,
    };
  const call = { id: input.callId ?? "call_1", name: input.tool ?? "", args: input.args ?? {}, origin };
  const attempt = input.attempt ?? 1;
  if (hook === "beforeToolCall") return { ...base, phase: "beforeToolCall", call, attempt };
  const error = toolError(input.error);
  if (hook === "onToolError") return { ...base, phase: "onToolError", call, attempt, error: error ?? { message: "" } };
  const payload: AfterToolCallPayload = { ...base, phase: "afterToolCall", call, attempt, durationMs: input.durationMs ?? 0 };
  if (input.result !== undefined) payload.result = input.result as Json;
  if (error !== undefined) payload.error = error;
  return payload;
}

export function toolContext(tool: string, input: CaseInput, nowMs: number, ids: RunIdentity): ToolContext {
  return { ...common(input, nowMs, ids), toolName: tool, callId: input.callId ?? "call_1", attempt: input.attempt ?? 1 };
}

export function middlewareContext(middleware: string, input: CaseInput, nowMs: number, ids: RunIdentity): MiddlewareContext {
  return { ...common(input, nowMs, ids), middlewareName: middleware };
}

/** The turn a middleware is given: the input's own, or one block per message. */
export function middlewareTurn(input: CaseInput, ids: RunIdentity): Turn {
  if (input.turn !== undefined) return input.turn as Turn;
  const kinds = { user: "user", assistant: "llm_text", system: "system" } as const;
  const blocks: Block[] = (input.messages ?? []).map((message) => ({
    id: newId("blk"),
    kind: kinds[message.role],
    role: message.role,
    payload: { [PayloadKeys.text]: message.text },
    metadata: {},
  }));
  return { id: ids.turnId, blocks, metadata: {}, data: {} };
}

/** The texts of a turn's blocks, in order (what a middleware case's `texts` expectation reads). */
export function turnTexts(turn: Turn): (string | null)[] {
  return turn.blocks.map((block) => {
    const text = block.payload[PayloadKeys.text];
    return typeof text === "string" ? text : null;
  });
}
