import type { JsonObject } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";
import type { HookPayload } from "../contracts/context.js";

/**
 * What a hook chain decided for one call, in one word: the unit replay and the shadow report compare.
 * - beforeToolCall: `proceed` (arguments as given), `rewrite` (new arguments), `skip`, `deny`, `abort`;
 * - afterToolCall: `proceed` (result as given), `rewrite` (result or error replaced), `abort`;
 * - onToolError: `default` (no opinion: the error policy decides), `retry`, `fail`, `abort`;
 * - any hook: `error` when a hook failure ended the chain (throw, timeout, memory, contract; fail-closed or abort-run).
 */
export type Verdict = "proceed" | "rewrite" | "skip" | "deny" | "abort" | "retry" | "fail" | "default" | "error";

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
