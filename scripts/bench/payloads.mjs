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

export const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
