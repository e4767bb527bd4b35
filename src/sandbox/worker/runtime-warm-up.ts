import type { RuntimeOpCall } from "../wire/guest-ops.js";
import type { WorkerLimits } from "../wire/protocol.js";
import type { CodeCache } from "./code-cache.js";
import { IsolateReserve } from "./isolate-reserve.js";
import { ScriptContext } from "./script-context.js";
import { TenantIsolate } from "./tenant-isolate.js";

const WARM_UP_HASH = "hookbox-warm-up";
/** A script of the worker's own, in the shape of a bundle: one hook that answers at once. */
const WARM_UP_BUNDLE = `(function () { return { default: { hooks: { beforeToolCall() { return { action: "proceed" }; } } } }; })`;
const WARM_UP_LIMITS: WorkerLimits = {
  memoryMb: 16,
  cpuMs: 1000,
  wallMs: 1000,
  maxPayloadBytes: 1024 * 1024,
  maxLogChars: 1024,
  logsPerSecond: 0,
};

/**
 * Every tenant isolate runs the runtime (runtime/) in each new context: installs it, registers a script, starts
 * callbacks. A new isolate gets the runtime's code from the worker's code cache, but a cache made at the first
 * compile holds only the runtime's top level, so each new isolate compiled the functions an install, a register
 * and a call use again (about a third of a millisecond of every cold start). So the worker runs the runtime once
 * in a private isolate, with a fixed script of its own (no tenant's code ever runs there), and keeps the cache V8
 * makes of it afterwards. Best effort: a failure leaves the cache as it was.
 */
export function warmRuntimeCode(options: { code: CodeCache; runtimeHash: string }): void {
  const { code, runtimeHash } = options;
  code.add(WARM_UP_HASH, WARM_UP_BUNDLE, "hookbox-warm-up.js");
  const tenant = new TenantIsolate("", { code, runtimeHash, isolates: new IsolateReserve() });
  try {
    tenant.prepare(WARM_UP_LIMITS);
    const context = ScriptContext.create({
      tenant,
      runId: "",
      script: "warm-up",
      bundleHash: WARM_UP_HASH,
      limits: WARM_UP_LIMITS,
      channel: () => () => undefined,
    });
    const call: RuntimeOpCall = ["call", 1, "hook", "beforeToolCall", '[{"phase":"beforeToolCall"}]', undefined];
    context.dispatcher.applySync(undefined, call as unknown[] as never[], { timeout: WARM_UP_LIMITS.cpuMs });
    code.recordCompiled(tenant.requireIsolate(), runtimeHash);
  } catch {
    // The runtime's cache stays the one its first compile made.
  } finally {
    tenant.dispose();
  }
}
