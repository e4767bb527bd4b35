import { describe, expect, it } from "vitest";
import { addEvents, emptyTimeline } from "../../ui/src/timeline.js";
import type { RunEvent } from "../../ui/src/types.js";

/* The page's model of a run, fed the way the event stream feeds it: the text being written is what it shows. */

const delta = (iteration: number, text: string, sofar?: true): RunEvent => ({
  type: "text-delta",
  timestampMs: 1,
  iteration,
  delta: text,
  ...(sofar && { sofar }),
});

describe("the inspector's timeline of live text", () => {
  it("appends pieces, and replaces its text with a sofar delta (a stream that rejoined mid-answer)", () => {
    let timeline = addEvents(emptyTimeline, [
      { type: "inference-started", timestampMs: 1, seq: 2, iteration: 1 },
      delta(1, "Hel"),
      delta(1, "lo, "),
    ]);
    expect(timeline.writing).toEqual({ iteration: 1, text: "Hello, " });
    // The reconnected stream starts from the whole answer so far: shown once, not appended to what was there.
    timeline = addEvents(timeline, [delta(1, "Hello, wor", true), delta(1, "ld")]);
    expect(timeline.writing).toEqual({ iteration: 1, text: "Hello, world" });
    timeline = addEvents(timeline, [{ type: "inference-finished", timestampMs: 1, seq: 3, iteration: 1, text: "Hello, world" }]);
    expect(timeline.writing).toBeUndefined();
  });
});
