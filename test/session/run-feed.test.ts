import { afterEach, describe, expect, it } from "vitest";
import { RECENT_EVENTS, RunFeed } from "../../src/session/run-feed.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { eventWithText, type EventWithText } from "../../src/events/event-json.js";

const log = (seq: number, message = "m"): EventWithText =>
  eventWithText({
    type: "log",
    seq,
    timestampMs: seq,
    sessionId: "s1",
    inferenceId: "i1",
    script: "s",
    level: "info",
    message,
  } as HookboxEvent);
const seqs = (events: EventWithText[] | undefined) => events?.map((event) => event.seq);

describe("RunFeed's latest events", () => {
  const { limit, maxChars } = RECENT_EVENTS;
  afterEach(() => Object.assign(RECENT_EVENTS, { limit, maxChars }));

  it("gives the published events after a seq while it keeps them all, from the seq it started at", () => {
    const feed = new RunFeed(3); // a resumed run: events 1-3 were published by another feed
    expect(feed.eventsAfter(3)).toEqual([]);
    expect(feed.eventsAfter(0)).toBeUndefined();
    for (const seq of [4, 5, 6]) feed.publish(log(seq));
    expect(seqs(feed.eventsAfter(3))).toEqual([4, 5, 6]);
    expect(seqs(feed.eventsAfter(5))).toEqual([6]);
    expect(feed.eventsAfter(9)).toEqual([]);
    expect(feed.eventsAfter(2)).toBeUndefined();
  });

  it("starts over after an event that does not follow the last one: nothing before it is given", () => {
    const feed = new RunFeed();
    for (const seq of [1, 2]) feed.publish(log(seq));
    feed.publish(log(4));
    expect(feed.eventsAfter(0)).toBeUndefined();
    expect(feed.eventsAfter(2)).toBeUndefined();
    feed.publish(log(3)); // late, out of order
    expect(feed.eventsAfter(3)).toBeUndefined();
    feed.publish(log(5));
    expect(seqs(feed.eventsAfter(4))).toEqual([5]);
  });

  it("keeps at most RECENT_EVENTS.limit events and RECENT_EVENTS.maxChars of their JSON", () => {
    RECENT_EVENTS.limit = 3;
    const feed = new RunFeed();
    for (const seq of [1, 2, 3, 4]) feed.publish(log(seq));
    expect(feed.eventsAfter(0)).toBeUndefined();
    expect(seqs(feed.eventsAfter(1))).toEqual([2, 3, 4]);
    RECENT_EVENTS.limit = limit;
    RECENT_EVENTS.maxChars = log(5, "x".repeat(100)).json.length * 2;
    for (const seq of [5, 6, 7]) feed.publish(log(seq, "x".repeat(100)));
    expect(feed.eventsAfter(4)).toBeUndefined();
    expect(seqs(feed.eventsAfter(5))).toEqual([6, 7]);
  });
});
