import { describe, expect, it } from "vitest";
import { BackgroundTurns } from "../../src/server/background-turns.js";

/*
 * When `hookbox serve`'s background builds take a step (src/server/background-turns.ts): once nothing has been
 * in flight for quietMs, or, on a server that is never idle, once a step has waited (1 - share) / share times as
 * long as the step before it took. Real timers: what is asserted is an order and a lower bound, never a speed.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("background turns", () => {
  it("a step waits while a request is in flight and starts once the server has been quiet for quietMs", async () => {
    const turns = new BackgroundTurns({ runsInFlight: () => 0, quietMs: 30, share: 0.001 });
    // The first step has no step before it and starts at once; after one of 20 ms, the next may wait 20 s.
    await turns.step(() => sleep(20));
    let releaseRequest!: () => void;
    const request = turns.during(() => new Promise<void>((resolve) => (releaseRequest = resolve)));
    const events: string[] = [];
    const step = turns.step(async () => void events.push("step"));
    await sleep(200);
    expect(events).toEqual([]);
    const endedAt = performance.now();
    events.push("request ended");
    releaseRequest();
    await request;
    await step;
    expect(events).toEqual(["request ended", "step"]);
    expect(performance.now() - endedAt).toBeGreaterThanOrEqual(29);
  });

  it("a step waits while a run is in flight", async () => {
    let runs = 1;
    const turns = new BackgroundTurns({ runsInFlight: () => runs, quietMs: 10, share: 0.001 });
    await turns.step(() => sleep(20));
    let started = false;
    const step = turns.step(async () => void (started = true));
    await sleep(200);
    expect(started).toBe(false);
    runs = 0;
    await step;
    expect(started).toBe(true);
  });

  it("on a server that is never idle, each step still gets its share: it waits (1 - share) / share times the last step, no longer", async () => {
    // A run in flight for good (a run paused for an approval, its SSE stream held open).
    const turns = new BackgroundTurns({ runsInFlight: () => 1, quietMs: 10, share: 0.25 });
    // The first step has no step before it: it starts at once.
    await turns.step(() => sleep(100));
    const endedAt = performance.now();
    let startedAt = 0;
    await turns.step(async () => void (startedAt = performance.now()));
    // 100 ms of step at a quarter of the time: 300 ms of waiting, then the next step (timers may fire 1 ms early).
    expect(startedAt - endedAt).toBeGreaterThanOrEqual(298);
  });

  it("a request that fails still ends: steps go on after it", async () => {
    const turns = new BackgroundTurns({ runsInFlight: () => 0, quietMs: 5, share: 0.001 });
    await expect(turns.during(() => Promise.reject(new Error("handler threw")))).rejects.toThrow("handler threw");
    let started = false;
    await turns.step(async () => void (started = true));
    expect(started).toBe(true);
  });
});
