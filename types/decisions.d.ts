/*
 * What each hook may return (docs/script-api.md): part of the script API (types/hookbox.d.ts re-exports it), in a
 * file of its own so host code (hookbox/testing, types/testing.d.ts) can name the decisions without taking in the
 * script's globals. Hand-written; the host validates the same shapes with zod (src/contracts/hook-returns.ts), and
 * test/contracts proves they agree.
 */
import type { Json, JsonObject } from "./turns.js";

export type BeforeToolCallDecision =
  /** Run the tool; `args` replaces the arguments wholesale. */
  | { action: "proceed"; args?: JsonObject }
  /** Do not run the tool; `result` is used as its result. */
  | { action: "skip"; result: Json; reason?: string }
  /** Do not run the tool; the model sees a denial carrying `reason`; the run goes on. */
  | { action: "deny"; reason: string }
  /** Do not run the tool; the whole run stops with status "aborted". */
  | { action: "abort"; reason: string }
  /**
   * Do not run the tool yet: a human approves (possibly editing the arguments) or rejects it. Approved, the
   * call goes on with the approved arguments and the later hooks; rejected or unanswered in time, it is a deny.
   * `timeoutMs` may shorten the host's approval timeout, never lengthen it.
   */
  | { action: "ask"; reason: string; timeoutMs?: number };

export type AfterToolCallDecision =
  /** The run stops with status "aborted". */
  | { action: "abort"; reason: string }
  /** Replace the result; a string `error` makes the call a failure, `null` clears one. */
  | { action?: never; result?: Json; error?: string | null };

export type OnToolErrorDecision =
  /** Run the tool again (bounded by attempts per call, retries per run and the retry time budget). */
  | { action: "retry"; backoffMs?: number; args?: JsonObject }
  /** Stop retrying; the model sees the (optionally rewritten) error. */
  | { action: "fail"; error?: string }
  /** The run stops with status "aborted". */
  | { action: "abort"; reason: string };

export type BeforeRunDecision =
  /** Start the run; `prompt` replaces the user's message as the model sees it. */
  | { action: "proceed"; prompt?: string }
  /** Do not start: the run ends "aborted" with errorCode RUN_DENIED, and the model is never called. */
  | { action: "deny"; reason: string };

export type BeforeFinishDecision =
  /** Do not finish yet: `message` is added as a user message and the model answers again (bounded by maxFinishContinues). */
  | { action: "continue"; message: string }
  /** The run stops with status "aborted". */
  | { action: "abort"; reason: string };

export type BeforeToolCallReturn = BeforeToolCallDecision | undefined;
export type BeforeRunReturn = BeforeRunDecision | undefined;
export type BeforeFinishReturn = BeforeFinishDecision | undefined;
export type AfterToolCallReturn = AfterToolCallDecision | undefined;
export type OnToolErrorReturn = OnToolErrorDecision | undefined;
