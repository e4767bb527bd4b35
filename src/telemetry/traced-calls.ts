import type { HookProvider } from "../loop/hook-provider.js";
import type { CallOutcome, PendingCall } from "../loop/tool-call.js";
import { PayloadKeys } from "../turns/keys.gen.js";
import type { RunTrace } from "./run-trace.js";

/** The same hook provider, with one `hookbox.hook` span per call (the chain and its rules are untouched). */
export function tracedHookProvider(provider: HookProvider, trace: RunTrace, bundleHash?: string, shadow = false): HookProvider {
  return {
    ...provider,
    has: (hook) => provider.has(hook),
    call: (hook, payload) =>
      trace.hook({ hook, script: provider.name, ...(bundleHash ? { bundleHash } : {}), ...(shadow ? { shadow } : {}) }, () =>
        provider.call(hook, payload),
      ),
  };
}

/** One `execute_tool` span around a call's whole life, so its hook calls are its children. */
export function traceToolCall(trace: RunTrace, call: PendingCall, work: () => Promise<CallOutcome>): Promise<CallOutcome> {
  // Without a tracer, no span and no wrapper: this runs for every tool call.
  if (trace.noop) return work();
  return trace.tool(call, async (span) => {
    const outcome = await work();
    if (outcome.kind === "result" && outcome.failed)
      span.failed(String((outcome.block.payload[PayloadKeys.error] as { message?: string })?.message ?? "failed"));
    if (outcome.kind === "abort") span.failed(outcome.reason);
    return outcome;
  });
}
