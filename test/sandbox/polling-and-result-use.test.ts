import { describe, expect, it } from "vitest";
import { ResultUse } from "../../src/sandbox/call-args.js";
import { PollPolicy } from "../../src/sandbox/wire/poll-policy.js";
import { expectReply, REPLY_MAX_SKIPPED_WAITS, replyArrived, stopAwaiting, type AwaitedPipe } from "../../src/sandbox/reply-wait.js";

/** The end of a wait whose message came `waitedMs` after it began, with a window of 0.2 ms. */
function endWait(policy: PollPolicy, waitedMs: number): void {
  if (waitedMs <= 0.2) policy.caught();
  else policy.lapsed();
}

/** How many of the next `waits` waits poll, when each message comes `waitedMs` after its wait began. */
function polledWaits(policy: PollPolicy, waits: number, waitedMs: number): number {
  let polled = 0;
  for (let i = 0; i < waits; i++) {
    if (policy.beginWait() > 0) polled++;
    endWait(policy, waitedMs);
  }
  return polled;
}

/** Waits, each with its message on time, that sleep before one polls (that one begun, not ended). */
function sleepsUntilPoll(policy: PollPolicy): number {
  let waits = 0;
  while (policy.beginWait() === 0) {
    endWait(policy, 0.03);
    waits++;
  }
  return waits;
}

/** A worker's pipe as the host's reply wait sees it, with nothing to read (the test says when a reply comes). */
function quietPipe(): AwaitedPipe {
  return { fd: () => undefined, push: () => {}, polling: new PollPolicy(0.2) };
}

/**
 * Lets the event loop turn until the host's window (0.2 ms) is over and judged, so the reply comes late. It
 * counts turns, not a timer: a timer could fire before the host's first turn on a loaded machine, and then the
 * reply would come inside the window.
 */
async function pastTheWindow(): Promise<void> {
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
  const start = performance.now();
  while (performance.now() - start < 1) await nextTurn();
  await nextTurn(); // the host's turn, queued before this one, judges the window first
}

/** Keeps the thread busy for `ms`, as a host running a loop step does. */
function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe("when to poll instead of sleeping", () => {
  it("polls every wait while messages come within the window", () => {
    const policy = new PollPolicy(0.2);
    expect(polledWaits(policy, 100, 0.03)).toBe(100);
  });

  it("after a miss sleeps through the next wait, then polls again; a hit ends the backoff", () => {
    const policy = new PollPolicy(0.2);
    expect(policy.beginWait()).toBe(0.2);
    endWait(policy, 500); // a pause between bursts of calls
    expect(policy.beginWait()).toBe(0); // this one sleeps and is not judged
    endWait(policy, 500);
    expect(policy.beginWait()).toBe(0.2);
    endWait(policy, 0.03);
    expect(polledWaits(policy, 50, 0.03)).toBe(50);
  });

  it("backs off exponentially while polls keep missing (host and worker on one CPU), up to 1 poll in 257 waits", () => {
    const policy = new PollPolicy(0.2);
    // Misses at waits 0, 2, 5, 10, 19, 36, 69, 134, 263: skipping 1, 2, 4, ... 256 waits after each.
    expect(polledWaits(policy, 263, 0.225)).toBe(8);
    expect(polledWaits(policy, 257 * 4, 0.225)).toBe(4);
    // Once polling hits again, every wait polls.
    expect(sleepsUntilPoll(policy)).toBeLessThanOrEqual(256);
    endWait(policy, 0.03);
    expect(polledWaits(policy, 20, 0.03)).toBe(20);
  });

  it("the host's bound: after polls that kept missing it sleeps through at most 16 waits, so it polls again sooner", () => {
    const policy = new PollPolicy(0.2, REPLY_MAX_SKIPPED_WAITS);
    expect(REPLY_MAX_SKIPPED_WAITS).toBe(16);
    // Misses at waits 0, 2, 5, 10, 19, 36: skipping 1, 2, 4, 8, 16, then 16 again after each.
    expect(polledWaits(policy, 36, 0.225)).toBe(5);
    expect(polledWaits(policy, 17 * 6, 0.225)).toBe(6);
    // When the misses end, the next poll comes within 16 sleeping waits (the worker's bound lets 256 pass).
    expect(sleepsUntilPoll(policy)).toBeLessThanOrEqual(16);
  });

  it("never polls when the window is 0 (turned off)", () => {
    const policy = new PollPolicy(0);
    expect(polledWaits(policy, 10, 0)).toBe(0);
  });

  it("the host: a reply handled after the window, because the host was busy meanwhile, is a hit", async () => {
    const pipe = quietPipe();
    const wait = async (reply: "late" | "while busy") => {
      expectReply(pipe);
      if (reply === "late") await pastTheWindow();
      else busyFor(2); // a loop step: the reply waits in the pipe and is handled when the step ends
      replyArrived(pipe);
      stopAwaiting(pipe);
    };
    await wait("late"); // a miss: the next wait sleeps, and the next miss makes 2 sleep
    await wait("late"); // slept, not judged
    await wait("while busy"); // polled: a hit ends the backoff
    await wait("late"); // so this miss makes only 1 wait sleep
    expect(pipe.polling.beginWait()).toBe(0);
    expect(pipe.polling.beginWait()).toBe(0.2);
  });

  it("the host: a window that ends with the reply not there is a miss, so the next wait sleeps", async () => {
    const pipe = quietPipe();
    expectReply(pipe);
    await pastTheWindow();
    replyArrived(pipe);
    stopAwaiting(pipe);
    expect(pipe.polling.beginWait()).toBe(0);
    expect(pipe.polling.beginWait()).toBe(0.2);
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
