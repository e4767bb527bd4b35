import type { HookboxEvent } from "../events/types.js";
import type { RunUsage } from "../host/usage.js";

/*
 * Usage accounting, derived from the events as they are stored (in the same transaction), so the totals
 * can never disagree with the event log. Each usage-bearing event becomes one ledger row stamped with
 * the event's time; `GET /v1/usage?since=` sums the rows after a time.
 */

/** A tenant's totals over a period. */
export interface UsageTotals {
  runs: number;
  inferences: number;
  inputTokens: number;
  outputTokens: number;
  /** inputTokens + outputTokens. */
  tokens: number;
  costUsd: number;
  /** Tool executions (retries included). */
  toolCalls: number;
  sandboxCpuMs: number;
}

/** What one event adds to the ledger. */
export interface UsageDelta {
  runs: number;
  inferences: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  toolCalls: number;
  sandboxCpuMs: number;
}

export const NO_USAGE: Readonly<UsageDelta> = {
  runs: 0,
  inferences: 0,
  inputTokens: 0,
  outputTokens: 0,
  costUsd: 0,
  toolCalls: 0,
  sandboxCpuMs: 0,
};

/** undefined for events that use nothing. */
export function usageDelta(event: HookboxEvent): UsageDelta | undefined {
  switch (event.type) {
    case "run-started":
      return { ...NO_USAGE, runs: 1 };
    case "inference-finished":
      return {
        ...NO_USAGE,
        inferences: 1,
        inputTokens: event.usage?.inputTokens ?? 0,
        outputTokens: event.usage?.outputTokens ?? 0,
        costUsd: event.usage?.costUsd ?? 0,
      };
    case "tool-finished":
      // A provider-run call is the provider's work (and on its bill), not one the host executed.
      return event.providerExecuted ? undefined : { ...NO_USAGE, toolCalls: 1 };
    case "capability":
      // A script's guard-model call spends tokens like an inference of the run.
      return event.usage
        ? { ...NO_USAGE, inputTokens: event.usage.inputTokens, outputTokens: event.usage.outputTokens, costUsd: event.usage.costUsd }
        : undefined;
    case "context-trimmed":
      // A summary of what left the model's context is made by the tenant's guard model, on the run's budget.
      return event.usage
        ? { ...NO_USAGE, inputTokens: event.usage.inputTokens, outputTokens: event.usage.outputTokens, costUsd: event.usage.costUsd }
        : undefined;
    case "run-finished":
      // A run's sandbox CPU is reported once, when it ends (each process reports the part it ran).
      return event.usage?.sandboxCpuMs ? { ...NO_USAGE, sandboxCpuMs: event.usage.sandboxCpuMs } : undefined;
    default:
      return undefined;
  }
}

/** A delta's values in the order of the ledger's and the totals' columns (runs ... sandbox_cpu_ms). */
export function usageColumns(u: UsageDelta): number[] {
  return [u.runs, u.inferences, u.inputTokens, u.outputTokens, u.costUsd, u.toolCalls, u.sandboxCpuMs];
}

export function totalsOf(deltas: Iterable<UsageDelta>): UsageTotals {
  const sum = { ...NO_USAGE };
  for (const delta of deltas) for (const key of Object.keys(sum) as (keyof UsageDelta)[]) sum[key] += delta[key];
  return { ...sum, tokens: sum.inputTokens + sum.outputTokens };
}

/** A run's tokens and cost so far (what a resumed run's budget starts from). */
export function runUsageOf(totals: UsageTotals): RunUsage {
  return { inputTokens: totals.inputTokens, outputTokens: totals.outputTokens, costUsd: totals.costUsd };
}
