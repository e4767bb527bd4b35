import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkWorkerMessage, commonReply, WorkerMessageSchema } from "../../src/sandbox/worker-messages.js";

/*
 * The hand check of the common reply (worker-messages.ts `commonReply`) answers as the schema does: whatever it
 * accepts, the schema accepts unchanged; what it declines goes to the schema.
 */

const anything = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.constantFrom(-1, -0, 0.5, 2 ** 53, Infinity, NaN, 1e999),
  fc.string({ maxLength: 5 }),
  fc.constantFrom("settled", "request", "failed", "next", "capability", "SANDBOX_TIMEOUT", "SANDBOX_MEMORY", "done"),
  fc.array(fc.nat(3), { maxLength: 2 }),
);
/** Mostly a valid value, sometimes anything: a message is then wrong in one field or a few, or in none. */
const mostly = <T>(valid: fc.Arbitrary<T>) => fc.oneof({ arbitrary: valid, weight: 12 }, { arbitrary: anything, weight: 1 });
const count = mostly(fc.nat(5));
const text = mostly(fc.string({ maxLength: 5 }));
const extra = fc.dictionary(fc.constantFrom("other", "__proto__", "load", "coverage", "$blobs", "tenant", "error"), anything, {
  minKeys: 1,
  maxKeys: 1,
});
const settled = fc.record(
  { type: mostly(fc.constant("settled")), callId: count, value: text, lazyKey: mostly(fc.string({ maxLength: 3 })) },
  { requiredKeys: ["type", "callId", "value"] },
);
const request = fc.record({
  type: mostly(fc.constant("request")),
  callId: count,
  requestId: count,
  op: mostly(fc.constantFrom("next", "capability")),
  value: text,
});
const withExtra = <T extends object>(record: fc.Arbitrary<T>) => fc.tuple(record, extra).map(([fields, more]) => ({ ...fields, ...more }));
const outcome = fc.oneof(
  { arbitrary: settled, weight: 4 },
  { arbitrary: request, weight: 2 },
  { arbitrary: withExtra(settled), weight: 1 },
  { arbitrary: withExtra(request), weight: 1 },
  { arbitrary: anything, weight: 1 },
);
const amount = mostly(fc.double({ min: 0, max: 1e6, noNaN: true }));
const fields = fc.record(
  {
    type: mostly(fc.constant("done")),
    seq: count,
    outcomes: mostly(fc.array(outcome, { maxLength: 3 })),
    logs: mostly(fc.constantFrom([], [{ tenant: "t", runId: "r", script: "s", level: "info", message: "m" }])),
    breach: mostly(fc.constantFrom("SANDBOX_TIMEOUT", "SANDBOX_MEMORY")),
    refused: mostly(fc.constant(true)),
    cpuMs: amount,
    isolates: count,
    workerMs: amount,
  },
  { requiredKeys: ["type", "seq", "outcomes", "logs"] },
);
const reply = fc.oneof({ arbitrary: fields, weight: 6 }, { arbitrary: withExtra(fields), weight: 1 });

describe("the common reply's hand check", () => {
  it("accepts only what the schema accepts unchanged", () => {
    fc.assert(
      fc.property(fc.oneof({ arbitrary: reply, weight: 20 }, { arbitrary: anything, weight: 1 }), (value) => {
        // Not through JSON text: a frame's JSON can hold what JSON.stringify would not write (1e999 is Infinity).
        const message: unknown = value;
        const common = commonReply(message);
        if (common === undefined) return;
        const parsed = WorkerMessageSchema.safeParse(message);
        expect(parsed.success).toBe(true);
        expect(common).toEqual(parsed.data);
      }),
      { numRuns: 5000 },
    );
  });

  it("takes the usual replies (settled, a request, a breach), and leaves the others to the schema", () => {
    const settledReply = {
      type: "done",
      seq: 3,
      outcomes: [{ type: "settled", callId: 7, value: "{}" }],
      logs: [],
      cpuMs: 0.05,
      isolates: 1,
      workerMs: 0.1,
    };
    expect(commonReply(JSON.parse(JSON.stringify(settledReply)))).toEqual(settledReply);
    const requestReply = {
      type: "done",
      seq: 4,
      outcomes: [{ type: "request", callId: 7, requestId: 1, op: "next", value: "{}" }],
      logs: [],
    };
    expect(commonReply(requestReply)).toEqual(requestReply);
    expect(commonReply({ ...settledReply, breach: "SANDBOX_TIMEOUT" })).toBeDefined();
    // A log line, a failed call, a load: the schema's (it clips texts).
    expect(commonReply({ ...settledReply, logs: [{ tenant: "t", runId: "r", script: "s", level: "info", message: "m" }] })).toBeUndefined();
    const failed = {
      ...settledReply,
      outcomes: [{ type: "failed", callId: 7, error: { code: "SCRIPT_ERROR", message: "x".repeat(5000) } }],
    };
    expect(commonReply(failed)).toBeUndefined();
    const checked = checkWorkerMessage(failed);
    expect(
      checked.ok &&
        checked.message.type === "done" &&
        checked.message.outcomes[0]?.type === "failed" &&
        checked.message.outcomes[0].error.message.length,
    ).toBeLessThan(5000);
    // One key the schema does not name: the schema strips it, so the hand check leaves it to the schema.
    expect(commonReply({ ...settledReply, rssBytes: 1 })).toBeUndefined();
    expect(checkWorkerMessage({ ...settledReply, rssBytes: 1 })).toEqual({ ok: true, message: settledReply });
  });
});
