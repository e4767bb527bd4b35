import { hookContractError } from "../errors.js";
import type { AfterToolCallPayload, BeforeToolCallPayload } from "./context.js";

/**
 * A provider-run call already happened at the provider: a hook can observe it or end the run, nothing else.
 * A decision that would run, skip, deny, ask about or rewrite it is outside the contract (HOOK_CONTRACT), so
 * the script's onHookError decides, as for any failed hook.
 */
export function refuseForProviderCall(payload: BeforeToolCallPayload | AfterToolCallPayload, script: string, decision: unknown): void {
  if (payload.call.providerExecuted !== true || decision === undefined || decision === null) return;
  const returned = decision as { action?: string; args?: unknown; result?: unknown; error?: unknown };
  if (returned.action === "abort") return;
  const problem =
    payload.phase === "beforeToolCall"
      ? returned.action === "proceed" && returned.args === undefined
        ? undefined
        : { path: returned.action === "proceed" ? "$.args" : "$.action", what: `"${returned.action}"` }
      : returned.result === undefined && returned.error === undefined
        ? undefined
        : { path: returned.result !== undefined ? "$.result" : "$.error", what: "a rewrite" };
  if (!problem) return;
  throw hookContractError(
    script,
    payload.phase,
    problem.path,
    `${problem.what} is not allowed for a provider-run call (${payload.call.name}): the provider already ran it; return nothing, or abort`,
  );
}
