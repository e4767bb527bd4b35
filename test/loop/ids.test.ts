import { describe, expect, it } from "vitest";
import { newId } from "../../src/loop/ids.js";
import { noopRunTrace } from "../../src/telemetry/run-trace.js";

describe("newId", () => {
  it("is the prefix and 32 hex digits: the creation time in milliseconds, then 80 random bits", () => {
    const before = Date.now();
    const id = newId("run");
    const after = Date.now();
    expect(id).toMatch(/^run_[0-9a-f]{32}$/);
    const madeMs = parseInt(id.slice(4, 16), 16);
    expect(madeMs).toBeGreaterThanOrEqual(before);
    expect(madeMs).toBeLessThanOrEqual(after);
    const ids = new Set(Array.from({ length: 10_000 }, () => newId("run").slice(16)));
    expect(ids.size).toBe(10_000);
  });

  it("sorts ids made in a later millisecond after those made before it", async () => {
    const earlier = Array.from({ length: 50 }, () => newId("sess"));
    const start = Date.now();
    while (Date.now() === start) await new Promise((resolve) => setTimeout(resolve, 1));
    const later = Array.from({ length: 50 }, () => newId("sess"));
    const latestEarlier = earlier.reduce((a, b) => (a > b ? a : b));
    for (const id of later) expect(id > latestEarlier).toBe(true);
  });
});

describe("a run's trace id without export", () => {
  it("is 32 lowercase hex digits of its own per run, or the caller's trace id when a traceparent came in", () => {
    const ids = Array.from({ length: 10_000 }, () => noopRunTrace({}).traceId);
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(10_000);
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect(noopRunTrace({ traceparent }).traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
  });
});
