import type { HookPayload } from "../contracts/context.js";
import { HookChain } from "../loop/hook-chain.js";
import { scriptHookProvider } from "../loop/hook-provider.js";
import { transition } from "../loop/verdict.js";
import type { ChainVerdict } from "../host/types.js";
import type { SandboxPool, SandboxLimits, ScriptManifest, ScriptSource, TenantSandbox, TenantSandboxOptions } from "../sandbox/api.js";
import type { HookName } from "../turns/keys.gen.js";
import type { JsonObject } from "../turns/json.js";
import type { Store } from "../store/types.js";
import type { RunFilter } from "../store/policy-types.js";

/*
 * Replay: the given scripts' hooks re-evaluated against recorded hook chain inputs. Each recorded
 * beforeToolCall payload as it was given, afterToolCall with the recorded result, onToolError with the
 * recorded error; no model is called and no tool runs (the payloads already hold everything). Each recorded
 * run gets fresh script contexts, as a live run does, and its calls are replayed in their recorded order.
 * Only the scripts are replayed: host hooks of the tenant are not part of the comparison.
 */

export interface ReplayChange {
  sessionId: string;
  runId: string;
  callId: string;
  hook: string;
  attempt: number;
  recorded: string;
  replayed: string;
  /** What the replayed chain's last hook returned (or its error), and the recorded one. */
  decision: JsonObject;
  recordedDecision: JsonObject;
}

export interface ReplaySummary {
  runs: number;
  calls: number;
  same: number;
  changed: Record<string, number>;
  /** Calls whose replayed chain ended in a hook failure (throw, timeout, memory, contract). */
  errors: number;
  /** Why the replay ended before the last recorded call, when it did (the counts are of what was replayed). */
  stopped?: { code: ReplayStop; message: string };
}

/**
 * What ends a replay early: the call limit, the sandbox CPU budget, hook failures in a row (a version that
 * fails every call tells nothing more by failing 100,000 times), or the caller going away.
 */
export type ReplayStop = "REPLAY_CALL_LIMIT" | "REPLAY_CPU_BUDGET" | "REPLAY_HOOK_FAILURES" | "REPLAY_ABANDONED";

export interface ReplayBounds {
  /** Stop after this many calls. */
  maxCalls?: number;
  /** Stop once the replayed hooks used this much sandbox CPU, ms (summed over the runs, as the worker measured it). */
  maxCpuMs?: number;
  /** Stop after this many calls in a row whose chain ended in a hook failure. */
  maxConsecutiveFailures?: number;
  /** Stop when aborted (the client went away); the call in progress finishes first. */
  signal?: AbortSignal;
}

export interface ReplayScripts {
  sandbox: TenantSandbox;
  manifests: ScriptManifest[];
  versions?: number[];
}

/**
 * Loads the scripts to replay in a sandbox of their own (`sandboxName`); `pool.drop(sandboxName)` frees it.
 * `sandbox` options name the tenant that owns it, so the replay runs where that tenant's code runs (its
 * isolation, its quarantine).
 */
export async function loadReplayScripts(
  pool: SandboxPool,
  sandboxName: string,
  sources: ScriptSource[],
  options: { limits?: Partial<SandboxLimits>; versions?: number[]; sandbox?: TenantSandboxOptions } = {},
): Promise<ReplayScripts> {
  const sandbox = pool.tenant(sandboxName, options.limits, options.sandbox);
  const manifests = await sandbox.load(sources);
  return { sandbox, manifests, ...(options.versions ? { versions: options.versions } : {}) };
}

export async function replay(
  options: {
    store: Store;
    filter: RunFilter;
    scripts: ReplayScripts;
    onChange?(change: ReplayChange): void;
  } & ReplayBounds,
): Promise<ReplaySummary> {
  const { store, scripts } = options;
  const summary: ReplaySummary = { runs: 0, calls: 0, same: 0, changed: {}, errors: 0 };
  const bounds = replayBounds(options);
  let cpuMsBefore = 0;
  for (const run of await options.store.findRuns(options.filter)) {
    const stop = bounds.stop(summary.calls, cpuMsBefore);
    if (stop) {
      summary.stopped = stop;
      break;
    }
    const recorded = (await store.listHookCalls(run.id)).filter((call) => !call.shadow && call.payload !== undefined);
    if (recorded.length === 0) continue;
    summary.runs += 1;
    const sandboxRun = await scripts.sandbox.openRun({ runId: `replay-${run.id}`, scripts: scripts.manifests });
    let last: ChainVerdict | undefined;
    const chain = new HookChain(
      scripts.manifests.map((manifest, i) => scriptHookProvider(manifest, sandboxRun, scripts.versions?.[i])),
      { emit: () => undefined },
      { onVerdict: (verdict) => (last = verdict) },
    );
    try {
      for (const call of recorded) {
        const stop = bounds.stop(summary.calls, cpuMsBefore + sandboxRun.cpuMs());
        if (stop) {
          summary.stopped = stop;
          break;
        }
        last = undefined;
        await (chain[call.hook as HookName] as (payload: HookPayload) => Promise<unknown>).call(
          chain,
          call.payload as unknown as HookPayload,
        );
        const replayed = last as ChainVerdict | undefined;
        summary.calls += 1;
        bounds.failed(replayed?.verdict === "error");
        if (replayed?.verdict === "error") summary.errors += 1;
        const verdict = replayed?.verdict ?? "proceed";
        if (verdict === call.verdict) {
          summary.same += 1;
          continue;
        }
        const change = transition(call.verdict, verdict);
        summary.changed[change] = (summary.changed[change] ?? 0) + 1;
        options.onChange?.({
          sessionId: run.sessionId,
          runId: run.id,
          callId: call.callId,
          hook: call.hook,
          attempt: call.attempt,
          recorded: call.verdict,
          replayed: verdict,
          decision: replayed?.decision ?? { action: "none" },
          recordedDecision: call.decision,
        });
      }
    } finally {
      cpuMsBefore += sandboxRun.cpuMs();
      await sandboxRun.close().catch(() => undefined);
    }
  }
  return summary;
}

/** The bounds of one replay: `stop` says whether (and why) it ends before the next call. */
function replayBounds(bounds: ReplayBounds): {
  stop(calls: number, cpuMs: number): ReplaySummary["stopped"];
  failed(failed: boolean): void;
} {
  let failuresInARow = 0;
  return {
    failed(failed) {
      failuresInARow = failed ? failuresInARow + 1 : 0;
    },
    stop(calls, cpuMs) {
      if (bounds.signal?.aborted) return { code: "REPLAY_ABANDONED", message: "the client went away" };
      if (bounds.maxCalls !== undefined && calls >= bounds.maxCalls)
        return { code: "REPLAY_CALL_LIMIT", message: `stopped after ${bounds.maxCalls} calls, the most one replay replays` };
      if (bounds.maxCpuMs !== undefined && cpuMs >= bounds.maxCpuMs)
        return {
          code: "REPLAY_CPU_BUDGET",
          message: `stopped after ${calls} calls: the replayed hooks used ${Math.round(cpuMs)} ms of sandbox CPU, the budget is ${bounds.maxCpuMs} ms`,
        };
      if (bounds.maxConsecutiveFailures !== undefined && failuresInARow >= bounds.maxConsecutiveFailures)
        return {
          code: "REPLAY_HOOK_FAILURES",
          message: `stopped after ${calls} calls: the last ${failuresInARow} calls in a row ended in a hook failure`,
        };
      return undefined;
    },
  };
}
