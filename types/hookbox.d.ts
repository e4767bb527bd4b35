/*
 * The script API of hookbox (docs/script-api.md): what `import ... from "hookbox"` gives a script.
 * The module exists only inside the sandbox; editors and `hookbox check` resolve "hookbox" to this file.
 * Hand-written. Keys, block kinds and enums come from the generated ./turns.d.ts (codegen/spec.json).
 * The host validates the same shapes with zod (src/contracts/hook-returns.ts); test/contracts proves they agree.
 */
import type { FinishReason, Json, JsonObject, Key, OnHookErrorPolicy, ToolOrigin, Turn, UserContext } from "./turns.js";
import type { AfterToolCallReturn, BeforeFinishReturn, BeforeRunReturn, BeforeToolCallReturn, OnToolErrorReturn } from "./decisions.js";

export * from "./turns.js";

export type Awaitable<T> = T | Promise<T>;
export type Tags = { [tag: string]: string };

// ---------------------------------------------------------------------------------------------------------------
// Context objects. All fields are JSON; ids are strings; times are epoch milliseconds.

export interface RunIds {
  sessionId: string;
  inferenceId: string;
  traceId: string;
  turnId: string;
}

/** How much of the run's budget is used and left, as of this ctx. */
export interface Budget {
  /** Inferences started so far (1 during the first). */
  iteration: number;
  maxIterations: number;
  /** Input plus output tokens of the finished inferences. */
  tokensUsed: number;
  maxTokens?: number;
  /** USD spent on the finished inferences (0 when the model has no pricing). */
  costUsd: number;
  maxCostUsd?: number;
  /** Tool retries the run may still make. */
  retriesLeft: number;
  deadlineMs?: number;
}

export interface CommonContext extends RunIds {
  timestampMs: number;
  deadlineMs?: number;
  tags: Tags;
  /** The user's original, unabridged request, whatever the model passed as arguments. */
  userContext?: UserContext;
  /** The run's budget: tokens, cost, iterations, retries, deadline. */
  budget: Budget;
}

export interface MiddlewareContext extends CommonContext {
  middlewareName: string;
}

export interface ToolContext extends CommonContext {
  toolName: string;
  callId: string;
  /** The name the model used, when it differs from `toolName`. */
  callName?: string;
  /** 1-based; greater than 1 when onToolError asked for a retry. */
  attempt: number;
}

/**
 * Tool arguments as the model sent them (after validation against the tool's `parameters`). Loosely typed so
 * `args.amount > 100` reads naturally; the values are JSON at run time.
 */
export type ToolArgs = { [name: string]: any };

export interface ToolCallRef {
  id: string;
  name: string;
  args: ToolArgs;
  /** Who runs the call: the host, a script, or the model's provider ("provider": then `providerExecuted` is true). */
  origin: ToolOrigin;
  /** The model's argument text when it was not a JSON object: `args` is then `{}` and the call fails with TOOL_ARGS. */
  rawArgs?: string;
  /**
   * The provider ran this call itself (web search, code execution). Hooks observe it: beforeToolCall and
   * afterToolCall may return nothing or abort; anything else is a contract error.
   */
  providerExecuted?: true;
}

export interface ToolErrorInfo {
  message: string;
  code?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Hook payloads.

export interface HookPayloadBase extends CommonContext {
  call: ToolCallRef;
  /** 1-based attempt number of this call. */
  attempt: number;
}

export interface BeforeToolCallPayload extends HookPayloadBase {
  phase: "beforeToolCall";
}

export interface AfterToolCallPayload extends HookPayloadBase {
  phase: "afterToolCall";
  result?: Json;
  durationMs: number;
  /** Present when the tool failed. */
  error?: ToolErrorInfo;
}

export interface OnToolErrorPayload extends HookPayloadBase {
  phase: "onToolError";
  error: ToolErrorInfo;
}

/** Before the run's first inference (not again when an interrupted run is resumed). */
export interface BeforeRunPayload extends CommonContext {
  phase: "beforeRun";
  /** The user's message for this run. */
  prompt: string;
  userContext: UserContext;
}

/** The model answered without calling tools: the run is about to finish with `text`. */
export interface BeforeFinishPayload extends CommonContext {
  phase: "beforeFinish";
  /** The final answer's text ("" when the model gave none). */
  text: string;
  /** Why the model stopped: "stop", or "length" / "content-filter" when the answer was cut off or refused. */
  finishReason?: FinishReason;
  /** Inferences made so far in this run. */
  iterations: number;
  /** How many times beforeFinish already sent this run on, and how many it may. */
  continues: number;
  maxFinishContinues: number;
}

export type HookPayload = BeforeToolCallPayload | AfterToolCallPayload | OnToolErrorPayload | BeforeRunPayload | BeforeFinishPayload;

// ---------------------------------------------------------------------------------------------------------------
// Hook return contracts (./decisions.d.ts: declarations a host program may import too, without this file's globals).

export * from "./decisions.js";

export interface Hooks {
  beforeToolCall?(payload: BeforeToolCallPayload & Capabilities): Awaitable<BeforeToolCallReturn | void>;
  afterToolCall?(payload: AfterToolCallPayload & Capabilities): Awaitable<AfterToolCallReturn | void>;
  onToolError?(payload: OnToolErrorPayload & Capabilities): Awaitable<OnToolErrorReturn | void>;
  /** Once per run, before the first inference: may rewrite the prompt or deny the run. */
  beforeRun?(payload: BeforeRunPayload & Capabilities): Awaitable<BeforeRunReturn | void>;
  /** When the model gives a final answer: may send it on with a message, or abort the run. */
  beforeFinish?(payload: BeforeFinishPayload & Capabilities): Awaitable<BeforeFinishReturn | void>;
}

// ---------------------------------------------------------------------------------------------------------------
// Capabilities (docs/capabilities.md): I/O the host does for the script, where the tenant's grants allow.
// Each is on the ctx (hook payload) of every middleware, tool and hook call; not enumerable, never serialized.
// Failures reject with an Error whose `code` is CAPABILITY_DENIED, CAPABILITY_QUOTA, CAPABILITY_INVALID,
// CAPABILITY_TIMEOUT or CAPABILITY_FAILED.

export interface FetchInit {
  method?: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS";
  headers?: { [name: string]: string };
  /** Text; send JSON as `JSON.stringify(value)` with a content-type header. */
  body?: string;
}

export interface FetchResponse {
  status: number;
  /** status 200-299. */
  ok: boolean;
  /** Lower-case names. */
  headers: { [name: string]: string };
  body: string;
  /** `JSON.parse(body)`. */
  json(): Json;
}

export interface KvSetOptions {
  /** The entry disappears this many ms after the write. */
  ttlMs?: number;
}

export interface KvPage {
  keys: string[];
  /** Present when there may be more: pass it as `list(prefix, { cursor })`. */
  cursor?: string;
}

/** The tenant's key-value store: JSON values shared by its scripts and runs, invisible to other tenants. */
export interface Kv {
  /** The value, or null when the key is missing or expired. */
  get(key: string): Promise<Json>;
  /** Keys up to 256 characters; values up to 64 KiB of JSON; within the tenant's quota. */
  set(key: string, value: Json, options?: KvSetOptions): Promise<null>;
  /**
   * Adds `by` (default 1) to the key's number and returns the sum, atomically across parallel calls, runs and
   * processes: a missing key counts as 0 and is created with `ttlMs`; an existing one keeps its expiry (a rate
   * limit's window). A key holding something other than a number is CAPABILITY_INVALID.
   */
  incr(key: string, by?: number, options?: KvSetOptions): Promise<number>;
  /**
   * Writes `value` only if the key holds `expected` (equal as JSON, object key order aside; `null`: the key is
   * missing), atomically; true when it wrote. `ttlMs` applies to the written value.
   */
  compareAndSet(key: string, expected: Json, value: Json, options?: KvSetOptions): Promise<boolean>;
  /** True when the key existed. */
  delete(key: string): Promise<boolean>;
  /** Keys starting with `prefix`, in order, a page (100) at a time. */
  list(prefix?: string, options?: { cursor?: string }): Promise<KvPage>;
}

export interface GuardMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface GenerateRequest {
  prompt?: string;
  messages?: GuardMessage[];
  maxTokens?: number;
}

export interface GenerateResult {
  text: string;
  usage: { inputTokens: number; outputTokens: number };
}

export interface Capabilities {
  /** An HTTP request by the host, to URLs under the tenant's egress list only. */
  fetch(url: string, init?: FetchInit): Promise<FetchResponse>;
  kv: Kv;
  /** The tenant's guard model, counted in the run's usage. */
  model: { generate(request: GenerateRequest): Promise<GenerateResult> };
}

// ---------------------------------------------------------------------------------------------------------------
// Middleware and tools.

/** Runs the rest of the chain and the model; pass a changed turn, or nothing to pass `turn` on unchanged. */
export type Next = (turn?: Turn) => Promise<Turn>;

/** Must return a turn: returning nothing is an error, never a silent loss. */
export type MiddlewareFunction = (turn: Turn, next: Next, ctx: MiddlewareContext & Capabilities) => Awaitable<Turn>;

/** A middleware is named by its function name, or explicitly with `{ name, run }`. */
export type Middleware = MiddlewareFunction | { name: string; run: MiddlewareFunction };

/** Returned by a tool to restart the context: the handler for `<suffix>` applies `enhanced_context_item`. */
export interface ContextRestartSignal {
  type: `context_restart_${string}`;
  enhanced_context_item?: JsonObject;
}

export interface ScriptTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments; calls are validated against it before the handler runs. */
  parameters: JsonObject;
  handler(args: ToolArgs, ctx: ToolContext & Capabilities): Awaitable<Json>;
}

export interface ScriptDefinition {
  /** Defaults to the file name. */
  name?: string;
  /** What happens when a hook throws, times out, exceeds memory or breaks its contract. Default "fail-closed". */
  onHookError?: OnHookErrorPolicy;
  middleware?: Middleware[];
  tools?: ScriptTool[];
  hooks?: Hooks;
}

/** A script's default export. */
export declare function defineScript(script: ScriptDefinition): ScriptDefinition;

// ---------------------------------------------------------------------------------------------------------------
// Typed keys (runtime/keys.ts). A wrong value type is a compile error here and a refusal at run time.

/** The value under `key` in `bag` (turn.data, turn.metadata or block.metadata), or undefined when missing. Throws if the stored value breaks the key's type. */
export declare function getKey<T>(bag: JsonObject, key: Key<T>): T | undefined;
/** Stores `value` under `key`; throws, storing nothing, when the value is not JSON or breaks the key's type. */
export declare function setKey<T>(bag: JsonObject, key: Key<T>, value: NoInfer<T>): void;
export declare function deleteKey(bag: JsonObject, key: Key<unknown>): void;

// ---------------------------------------------------------------------------------------------------------------
// Globals inside the sandbox. Output goes to the run's `log` events.

export interface ScriptConsole {
  debug(...values: unknown[]): void;
  log(...values: unknown[]): void;
  info(...values: unknown[]): void;
  warn(...values: unknown[]): void;
  error(...values: unknown[]): void;
}

declare global {
  var console: ScriptConsole;
}
