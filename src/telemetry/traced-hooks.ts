import type { HookProvider } from "../loop/hook-provider.js";
import type { RunTrace } from "./run-trace.js";

/** The same hook provider, with one `hookbox.hook` span per call (the chain and its rules are untouched). */
export function tracedHookProvider(provider: HookProvider, trace: RunTrace, bundleHash?: string): HookProvider {
  return {
    ...provider,
    has: (hook) => provider.has(hook),
    call: (hook, payload) =>
      trace.hook({ hook, script: provider.name, ...(bundleHash ? { bundleHash } : {}) }, () => provider.call(hook, payload)),
  };
}
