import { describe, expect, it } from "vitest";
import { EventLog } from "../../src/loop/event-log.js";
import { eventJson } from "../../src/events/event-json.js";
import type { HookboxEvent } from "../../src/events/types.js";

/*
 * An event becomes JSON text once, when it is emitted (src/events/event-json.ts): the budget's admission and the
 * sink (the store's writer) get that text with the event, and a reader of event objects finds the same text with
 * eventJson, whatever it does to its object afterwards.
 */
describe("an event's JSON text, made once at emit", () => {
  it("is handed to the admission and the sink with the event, and found by eventJson for a reader of objects", async () => {
    const admitted: string[] = [];
    const sunk: string[] = [];
    const log = new EventLog(
      { sessionId: "s1", inferenceId: "i1" },
      {
        admit: (_event, json) => (admitted.push(json), true),
        sink: (_event, json) => sunk.push(json),
      },
    );
    const emitted = log.emit({ type: "log", script: "s", level: "info", message: "hello" });
    expect(sunk).toEqual([JSON.stringify(emitted)]);
    expect(admitted).toEqual(sunk);
    expect(JSON.parse(sunk[0])).toMatchObject({ type: "log", seq: 1, sessionId: "s1", inferenceId: "i1", message: "hello" });

    // The emitter and a reader change the (shared) object: the text stays the event as emitted.
    (emitted as HookboxEvent & { message: string }).message = "changed by the emitter";
    const reader = log.iterate(1);
    const first = (await reader.next()).value as HookboxEvent & { message: string };
    first.message = "changed by the reader";
    expect(eventJson(first)).toBe(sunk[0]);
    await reader.return(undefined);
  });

  it("a refused event gets no seq, reaches no sink, and the next one takes its place", () => {
    const sunk: string[] = [];
    const log = new EventLog(
      { sessionId: "s1", inferenceId: "i1" },
      { admit: (event) => event.type !== "log", sink: (_event, json) => sunk.push(json) },
    );
    log.emit({ type: "log", script: "s", level: "info", message: "refused" });
    log.emit({ type: "inference-started", iteration: 1 });
    expect(sunk.map((json) => JSON.parse(json) as HookboxEvent).map((event) => [event.type, event.seq])).toEqual([
      ["inference-started", 1],
    ]);
  });
});
