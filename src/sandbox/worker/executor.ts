import { decodeSettlement, settleCall, type Collector, type WorkerCall } from "./guest-op-handler.js";
import { Failure, isTimeoutError, messageOf } from "./failure.js";
import type { RuntimeOpCall } from "../wire/guest-ops.js";

export type Breach = "SANDBOX_TIMEOUT" | "SANDBOX_MEMORY" | undefined;

/**
 * Runs one segment of a callback: a synchronous entry into the isolate (start or resume) bounded by the
 * callback's remaining CPU and wall budget. Time spent awaiting the host is between segments, so it is
 * never charged. Afterwards a callback is settled, awaiting the host, or failed: one that awaits nothing
 * the host can answer would never settle, so it fails at once.
 */
export function runSegment(call: WorkerCall, args: RuntimeOpCall, collector: Collector, calls: Map<number, WorkerCall>): Breach {
  const tenant = call.context.tenant;
  const remaining = Math.min(call.cpuLimitMs - call.cpuMs, call.wallLimitMs - call.wallMs);
  if (remaining <= 0) return fail(call, collector, calls, timeoutFailure(call));
  const cpuBefore = tenant.cpuTimeNs();
  const started = performance.now();
  let thrown: unknown;
  let returned: unknown;
  try {
    returned = call.context.dispatcher.applySync(undefined, args as unknown[] as never[], { timeout: Math.max(1, Math.ceil(remaining)) });
  } catch (error) {
    thrown = error;
  }
  call.wallMs += performance.now() - started;
  if (tenant.isolateLost()) {
    const failure = tenant.memoryFailure(describe(call));
    failure.details.script = call.context.script;
    // Everything else of this tenant lived in the same isolate.
    for (const other of [...calls.values()]) {
      if (other !== call && other.context.tenant === tenant) {
        fail(
          other,
          collector,
          calls,
          new Failure(
            "SANDBOX_CRASHED",
            `${describe(other)} was lost: the tenant's isolate was recycled after another callback exceeded its memory limit`,
          ),
        );
      }
    }
    return fail(call, collector, calls, failure);
  }
  const segmentCpuMs = Number(tenant.cpuTimeNs() - cpuBefore) / 1e6;
  call.cpuMs += segmentCpuMs;
  collector.cpuMs = (collector.cpuMs ?? 0) + segmentCpuMs;
  // A callback that settled at once answers through the start's return value (runtime/callbacks.ts).
  const settled = typeof returned === "string" && !call.finished ? decodeSettlement(returned) : undefined;
  if (settled !== undefined) settleCall(collector, calls, call, settled.ok, settled.text, settled.lazyKey);
  if (call.finished) return undefined;
  if (thrown !== undefined) {
    if (isTimeoutError(thrown) || call.cpuMs > call.cpuLimitMs) return fail(call, collector, calls, timeoutFailure(call));
    return fail(call, collector, calls, new Failure("SANDBOX_CRASHED", `${describe(call)}: sandbox error: ${messageOf(thrown)}`));
  }
  if (call.cpuMs > call.cpuLimitMs) return fail(call, collector, calls, timeoutFailure(call));
  if (call.pendingRequests > 0) return undefined;
  return fail(
    call,
    collector,
    calls,
    new Failure(
      "SCRIPT_ERROR",
      `${describe(call)} never settles: it awaits a promise that nothing can resolve (only next(), ctx capabilities and its own code can)`,
      {
        script: call.context.script,
      },
    ),
  );
}

function describe(call: WorkerCall): string {
  return `${call.context.script}: ${call.kind} ${call.target}`;
}

function timeoutFailure(call: WorkerCall): Failure {
  const cpu = call.cpuMs >= call.cpuLimitMs || call.cpuLimitMs <= call.wallLimitMs;
  const message = cpu
    ? `${describe(call)} exceeded its CPU time limit of ${call.cpuLimitMs} ms`
    : `${describe(call)} exceeded its wall time limit of ${call.wallLimitMs} ms`;
  return new Failure("SANDBOX_TIMEOUT", message, {
    script: call.context.script,
    limit: cpu ? "cpu" : "wall",
    limitMs: cpu ? call.cpuLimitMs : call.wallLimitMs,
  });
}

function fail(call: WorkerCall, collector: Collector, calls: Map<number, WorkerCall>, failure: Failure): Breach {
  call.finished = true;
  calls.delete(call.callId);
  collector.outcomes = collector.outcomes.filter((outcome) => outcome.callId !== call.callId);
  collector.outcomes.push({ type: "failed", callId: call.callId, error: failure.serialize() });
  if (!call.context.tenant.isolateLost()) {
    try {
      call.context.dispatcher.applySync(undefined, ["forget", call.callId] satisfies RuntimeOpCall, { timeout: 20 });
    } catch {
      // best effort: the runtime only keeps a small record
    }
  }
  return failure.code === "SANDBOX_TIMEOUT" || failure.code === "SANDBOX_MEMORY" ? failure.code : undefined;
}
