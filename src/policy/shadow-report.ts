import { transition } from "../loop/verdict.js";
import type { HookCallRecord, Store } from "../store/index.js";

/*
 * GET /v1/deployments/:id/shadow-report: over the runs that used the deployment, each shadow verdict set
 * beside the active verdict of the same call, hook and attempt.
 */

export interface ShadowSample {
  runId: string;
  callId: string;
  hook: string;
  attempt: number;
  active: string;
  shadow: string;
  /** What the shadow chain's last hook returned (or its error). */
  shadowDecision: unknown;
}

export interface ShadowReport {
  deploymentId: string;
  runs: number;
  calls: number;
  agreed: number;
  disagreed: Record<string, number>;
  samples: ShadowSample[];
}

const key = (call: HookCallRecord) => `${call.callId}\0${call.hook}\0${call.attempt}`;

export async function shadowReport(store: Store, tenant: string, deploymentId: string, maxSamples = 50): Promise<ShadowReport> {
  const report: ShadowReport = { deploymentId, runs: 0, calls: 0, agreed: 0, disagreed: {}, samples: [] };
  for (const run of await store.findRuns({ tenant, deploymentId })) {
    report.runs += 1;
    const calls = await store.listHookCalls(run.id);
    const active = new Map(calls.filter((call) => !call.shadow).map((call) => [key(call), call]));
    for (const shadow of calls.filter((call) => call.shadow)) {
      const match = active.get(key(shadow));
      if (!match) continue;
      report.calls += 1;
      if (match.verdict === shadow.verdict) {
        report.agreed += 1;
        continue;
      }
      const change = transition(match.verdict, shadow.verdict);
      report.disagreed[change] = (report.disagreed[change] ?? 0) + 1;
      if (report.samples.length < maxSamples) {
        report.samples.push({
          runId: run.id,
          callId: shadow.callId,
          hook: shadow.hook,
          attempt: shadow.attempt,
          active: match.verdict,
          shadow: shadow.verdict,
          shadowDecision: shadow.decision,
        });
      }
    }
  }
  return report;
}
