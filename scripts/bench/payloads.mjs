// What every bench calls: one small hook body and its ~400-byte beforeToolCall payload.

/** The same small hook everywhere: read the payload, decide, return a small object. */
export const HOOK_BODY = `if (p.call.name === "refund" && p.call.args.amount > 100) return { action: "deny", reason: "over limit" }; return { action: "proceed" };`;

export const smallPayload = {
  phase: "beforeToolCall",
  call: { id: "call-1", name: "lookup_order", args: { id: "A17" }, origin: "script" },
  attempt: 1,
  sessionId: "s1",
  inferenceId: "i1",
  traceId: "t1",
  turnId: "u1",
  timestampMs: 1700000000000,
  tags: { env: "bench" },
  userContext: { originalUserRequest: "Please refund order A17", timestampMs: 1700000000000 },
};

/**
 * Mass-tenant benches run thousands of loads; on an overloaded machine a worker descheduled for longer than a
 * tenant's 200 ms limit fails one (SANDBOX_TIMEOUT, docs/sandbox.md "Known limits"). Such a tenant is counted
 * (the bench reports `mass_tenant_failures`) instead of ending the whole bench.
 */
export const massFailures = { count: 0 };
export function countFailure(error) {
  massFailures.count++;
  process.stderr.write(`a mass-bench tenant failed: ${error.code ?? ""} ${String(error.message).slice(0, 200)}\n`);
}

export const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
