import type { HookPayload } from "../contracts/context.js";
import { HookChain } from "../loop/hook-chain.js";
import { scriptHookProvider } from "../loop/hook-provider.js";
import { transition } from "../loop/verdict.js";
import type { ChainVerdict } from "../host/types.js";
import type { SandboxPool, SandboxLimits, ScriptManifest, ScriptSource, TenantSandbox } from "../sandbox/api.js";
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
}

export interface ReplayScripts {
  sandbox: TenantSandbox;
  manifests: ScriptManifest[];
  versions?: number[];
}

/** Loads the scripts to replay in a sandbox of their own (`sandboxName`); `pool.drop(sandboxName)` frees it. */
export async function loadReplayScripts(
  pool: SandboxPool,
  sandboxName: string,
  sources: ScriptSource[],
  options: { limits?: Partial<SandboxLimits>; versions?: number[] } = {},
): Promise<ReplayScripts> {
  const sandbox = pool.tenant(sandboxName, options.limits);
  const manifests = await sandbox.load(sources);
  return { sandbox, manifests, ...(options.versions ? { versions: options.versions } : {}) };
}

export async function replay(options: {
  store: Store;
  filter: RunFilter;
  scripts: ReplayScripts;
  onChange?(change: ReplayChange): void;
  /** Stop after this many calls (the summary says how many were replayed). */
  maxCalls?: number;
}): Promise<ReplaySummary> {
  const { store, scripts } = options;
  const summary: ReplaySummary = { runs: 0, calls: 0, same: 0, changed: {}, errors: 0 };
  const maxCalls = options.maxCalls ?? Number.POSITIVE_INFINITY;
  for (const run of await options.store.findRuns(options.filter)) {
    if (summary.calls >= maxCalls) break;
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
        if (summary.calls >= maxCalls) break;
        last = undefined;
        await (chain[call.hook as HookName] as (payload: HookPayload) => Promise<unknown>).call(
          chain,
          call.payload as unknown as HookPayload,
        );
        const replayed = last as ChainVerdict | undefined;
        summary.calls += 1;
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
      await sandboxRun.close().catch(() => undefined);
    }
  }
  return summary;
}
