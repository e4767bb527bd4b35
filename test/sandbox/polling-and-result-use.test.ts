import { describe, expect, it } from "vitest";
import { ResultUse } from "../../src/sandbox/call-args.js";
import { PollPolicy } from "../../src/sandbox/wire/poll-policy.js";

describe("when to poll instead of sleeping", () => {
  it("polls while messages come within the window; stalls and pauses now and then do not stop it; slow ones do", () => {
    const policy = new PollPolicy(0.2);
    expect(policy.pollMs).toBe(0.2);
    for (let i = 0; i < 20; i++) policy.record(0.03);
    policy.record(500); // a pause between bursts of calls
    policy.record(0.03);
    policy.record(2); // a stall of the VM
    expect(policy.pollMs).toBe(0.2);
    for (let i = 0; i < 20; i++) policy.record(i % 5 === 0 ? 1.5 : 0.05); // one in five waits stalled
    expect(policy.pollMs).toBe(0.2);
    for (let i = 0; i < 20; i++) policy.record(3); // replies that take milliseconds (big payloads)
    expect(policy.pollMs).toBe(0);
    for (let i = 0; i < 20; i++) policy.record(0.03);
    expect(policy.pollMs).toBe(0.2);
  });

  it("never polls when the window is 0 (turned off)", () => {
    const policy = new PollPolicy(0);
    policy.record(0);
    expect(policy.pollMs).toBe(0);
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
