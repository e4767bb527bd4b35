import type { JsonObject } from "../turns/json.js";
import type { Verdict } from "../host/types.js";

/** One chain evaluation in progress: the last decision shown, whether a hook failure ended it, whether it asked. */
export interface Trace {
  decision: JsonObject;
  failed: boolean;
  asked: boolean;
}

/** The verdict of a finished tool-call hook chain, from its outcome (hook-chain.ts) and what happened on the way. */
export function toolHookVerdict(
  hook: "beforeToolCall" | "afterToolCall" | "onToolError",
  given: { call: { args: JsonObject }; result?: unknown; error?: unknown },
  outcome: { kind: string; args?: JsonObject; result?: unknown; error?: unknown },
  trace: Trace,
): Verdict {
  if (trace.failed) return "error";
  if (hook === "beforeToolCall") {
    // An ask is the verdict whatever the reviewer answered (replay and shadows have nobody to answer).
    if (trace.asked && (outcome.kind === "proceed" || outcome.kind === "deny")) return "ask";
    if (outcome.kind === "proceed") return outcome.args === given.call.args ? "proceed" : "rewrite";
    return outcome.kind === "blocked" ? "error" : (outcome.kind as Verdict);
  }
  if (hook === "afterToolCall") {
    if (outcome.kind === "abort") return "abort";
    return outcome.result === given.result && outcome.error === given.error ? "proceed" : "rewrite";
  }
  return outcome.kind as Verdict;
}

/** `"proceed->deny"`: how a report names a changed verdict. */
export function transition(from: string, to: string): string {
  return `${from}->${to}`;
}

/** The call id run hooks' verdicts are recorded under (they belong to the run, not to a tool call). */
export const RUN_CALL_ID = "run";

/** The verdict of a finished run-hook chain: beforeRun proceeds, rewrites the prompt or denies; beforeFinish finishes (`proceed`), continues or aborts. */
export function runHookVerdict(givenPrompt: string | undefined, outcome: { kind: string; prompt?: string }, trace: Trace): Verdict {
  if (trace.failed) return "error";
  if (outcome.kind === "proceed") return outcome.prompt === givenPrompt ? "proceed" : "rewrite";
  if (outcome.kind === "finish") return "proceed";
  if (outcome.kind === "failed") return "error";
  return outcome.kind as Verdict;
}
