import type { JsonObject } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";
import type { HookPayload } from "../contracts/context.js";

/**
 * What a hook chain decided for one call, in one word: the unit replay and the shadow report compare.
 * - beforeToolCall: `proceed` (arguments as given), `rewrite` (new arguments), `skip`, `deny`, `ask` (a hook asked
 *   for an approval, whatever the answer), `abort`;
 * - afterToolCall: `proceed` (result as given), `rewrite` (result or error replaced), `abort`;
 * - onToolError: `default` (no opinion: the error policy decides), `retry`, `fail`, `abort`;
 * - any hook: `error` when a hook failure ended the chain (throw, timeout, memory, contract; fail-closed or abort-run).
 */
export type Verdict = "proceed" | "rewrite" | "skip" | "deny" | "ask" | "abort" | "retry" | "fail" | "default" | "error";

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

/** One evaluation of a chain: its input, its verdict and the decision that settled it. */
export interface ChainVerdict {
  hook: HookName;
  callId: string;
  attempt: number;
  verdict: Verdict;
  /** The last hook decision of the chain (`{action: "none"}` when no hook had an opinion). */
  decision: JsonObject;
  payload: HookPayload;
  /** From a shadow chain (never enforced). */
  shadow: boolean;
}

/** `"proceed->deny"`: how a report names a changed verdict. */
export function transition(from: string, to: string): string {
  return `${from}->${to}`;
}
