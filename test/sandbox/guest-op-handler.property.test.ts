import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { createGuestOpHandler, type Collector, type WorkerCall } from "../../src/sandbox/worker/guest-op-handler.js";
import { LogLimiter } from "../../src/sandbox/worker/log-limiter.js";
import type { ScriptContext } from "../../src/sandbox/worker/script-context.js";
import { checkWorkerMessage } from "../../src/sandbox/worker-messages.js";
import { propertyParameters } from "../helpers/property.js";

/*
 * The worker's handler of the runtime's channel (src/sandbox/worker/guest-op-handler.ts) takes every argument as
 * hostile: whatever the guest passes, in whatever order, what it records goes into a reply the host's protocol
 * check accepts (a reply it refuses kills the worker with every co-tenant's call), and it never throws. In the
 * test's own process, with a stand-in context.
 */
const context = { tenant: { name: "t" }, runId: "r", script: "s" } as unknown as ScriptContext;

function newCall(callId: number): WorkerCall {
  return {
    callId,
    context,
    kind: "hook",
    target: "beforeToolCall",
    cpuMs: 0,
    wallMs: 0,
    cpuLimitMs: 100,
    wallLimitMs: 100,
    maxPayloadBytes: 1024,
    pendingRequests: 0,
    pendingCapabilities: 0,
    nextRequested: false,
    finished: false,
  };
}

const hostile = fc.oneof(
  fc.constantFrom("settle", "request", "log", "next", "capability", "info", 1, 1.5, -1, Number.NaN, Infinity, true, null, undefined),
  fc.integer({ min: -2, max: 3 }),
  fc.double(),
  fc.string({ maxLength: 40 }),
  fc.anything(),
);

/** Each position: what the runtime passes there for some op, and anything else. */
const op = fc.oneof(fc.constantFrom("settle", "request", "log"), hostile);
const first = fc.oneof(fc.constantFrom(1, 2, 3, "info", "warn"), hostile);
const second = fc.oneof(fc.integer({ min: -1, max: 10 }), fc.double(), fc.boolean(), fc.string({ maxLength: 2000 }), hostile);
const third = fc.oneof(fc.constantFrom("next", "capability"), fc.string({ maxLength: 2000 }), hostile);
const fourth = fc.oneof(fc.string({ maxLength: 2000 }), hostile);

describe("the worker's channel handler", () => {
  it("records only what the host's protocol accepts, whatever the guest passes", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(op, first, second, third, fourth), { maxLength: 12 }), (ops) => {
        const calls = new Map<number, WorkerCall>([
          [1, newCall(1)],
          [2, newCall(2)],
        ]);
        const collector: Collector = { outcomes: [], logs: [] };
        const handler = createGuestOpHandler(
          { calls, collector: () => collector, limiter: new LogLimiter(100), maxLogChars: 64 },
          () => context,
        );
        for (const [op, a, b, c, d] of ops) expect(handler(op, a, b, c, d)).toBeUndefined();
        const reply = { type: "done", seq: 1, outcomes: collector.outcomes, logs: collector.logs };
        const checked = checkWorkerMessage(JSON.parse(JSON.stringify(reply)));
        expect(checked.ok ? "ok" : checked.problem).toBe("ok");
      }),
      propertyParameters(300),
    );
  });

  it("a request whose id is not a count is ignored", () => {
    const calls = new Map<number, WorkerCall>([[1, newCall(1)]]);
    const collector: Collector = { outcomes: [], logs: [] };
    const handler = createGuestOpHandler(
      { calls, collector: () => collector, limiter: new LogLimiter(100), maxLogChars: 64 },
      () => context,
    );
    for (const requestId of [1.5, -1, Number.NaN, Infinity, 2 ** 60]) handler("request", 1, requestId, "capability", "{}");
    expect(collector.outcomes).toEqual([]);
    handler("request", 1, 7, "capability", "{}");
    expect(collector.outcomes).toEqual([{ type: "request", callId: 1, requestId: 7, op: "capability", value: "{}" }]);
  });
});
