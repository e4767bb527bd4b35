import { describe, expect, it } from "vitest";
import { ResultUse } from "../../src/sandbox/call-args.js";
import { PollPolicy } from "../../src/sandbox/wire/poll-policy.js";

/** How many of the next `waits` waits poll, when each message comes `waitedMs` after its wait began. */
function polledWaits(policy: PollPolicy, waits: number, waitedMs: number): number {
  let polled = 0;
  for (let i = 0; i < waits; i++) {
    if (policy.beginWait() > 0) polled++;
    policy.endWait(waitedMs);
  }
  return polled;
}

describe("when to poll instead of sleeping", () => {
  it("polls every wait while messages come within the window", () => {
    const policy = new PollPolicy(0.2);
    expect(polledWaits(policy, 100, 0.03)).toBe(100);
  });

  it("after a miss sleeps through the next wait, then polls again; a hit ends the backoff", () => {
    const policy = new PollPolicy(0.2);
    expect(policy.beginWait()).toBe(0.2);
    policy.endWait(500); // a pause between bursts of calls
    expect(policy.beginWait()).toBe(0); // this one sleeps and is not judged
    policy.endWait(500);
    expect(policy.beginWait()).toBe(0.2);
    policy.endWait(0.03);
    expect(polledWaits(policy, 50, 0.03)).toBe(50);
  });

  it("backs off exponentially while polls keep missing (host and worker on one CPU), up to 1 poll in 257 waits", () => {
    const policy = new PollPolicy(0.2);
    // Misses at waits 0, 2, 5, 10, 19, 36, 69, 134, 263: skipping 1, 2, 4, ... 256 waits after each.
    expect(polledWaits(policy, 263, 0.225)).toBe(8);
    expect(polledWaits(policy, 257 * 4, 0.225)).toBe(4);
    // Once polling hits again, every wait polls.
    let waits = 0;
    while (policy.beginWait() === 0) {
      policy.endWait(0.03);
      waits++;
    }
    policy.endWait(0.03);
    expect(waits).toBeLessThanOrEqual(256);
    expect(polledWaits(policy, 20, 0.03)).toBe(20);
  });

  it("never polls when the window is 0 (turned off)", () => {
    const policy = new PollPolicy(0);
    expect(polledWaits(policy, 10, 0)).toBe(0);
  });
});
describe("how a hook's next big result travels", () => {
  it("lazily at first, parsed ahead after a pass-through, inside the payload after a read (lazily again every 16th call)", () => {
    const use = new ResultUse();
    expect(use.plan("s", "afterToolCall")).toEqual({ lazy: true, prefetch: false });
    use.record("s", "afterToolCall", '{"x":1}', true);
    expect(use.plan("s", "afterToolCall")).toEqual({ lazy: true, prefetch: true });
    use.record("s", "afterToolCall", "", false);
    expect(use.plan("s", "afterToolCall")).toEqual({ lazy: true, prefetch: false });
    use.record("s", "afterToolCall", '{"result":{}}', false);
    const plans = Array.from({ length: 32 }, () => use.plan("s", "afterToolCall").lazy);
    expect(plans.filter(Boolean)).toHaveLength(2);
    expect(use.plan("other", "afterToolCall")).toEqual({ lazy: true, prefetch: false });
  });
});
