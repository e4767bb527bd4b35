import type { HookboxEvent } from "./types.js";

/*
 * An event becomes JSON text once, when it is emitted (src/loop/event-log.ts): the text travels with the event
 * (EventWithText) to the store, which writes these bytes, and to every stream reader, which sends them, with no
 * per-reader copy. The text is the event as emitted: a reader that later changes its own event object changes
 * nothing that is sent. A reader handed event objects (the library's, `--json`) finds the text with eventJson.
 */

/** An emitted event with its JSON text; its seq and type too, so a stream sends it as it sends a stored event's text. */
export interface EventWithText {
  event: HookboxEvent;
  json: string;
  seq: number;
  type: HookboxEvent["type"];
}

const texts = new WeakMap<HookboxEvent, string>();

/** The event's JSON text: the one it was handed out or read with (withEventJson), else made now and kept. */
export function eventJson(event: HookboxEvent): string {
  let text = texts.get(event);
  if (text === undefined) {
    text = JSON.stringify(event);
    texts.set(event, text);
  }
  return text;
}

/** The event, known from now on to have `json` as its text (an event read from the store, or handed to a reader of objects). */
export function withEventJson(event: HookboxEvent, json: string): HookboxEvent {
  texts.set(event, json);
  return event;
}

/** The event with its text (by default the one eventJson gives). */
export function eventWithText(event: HookboxEvent, json = eventJson(event)): EventWithText {
  return { event, json, seq: event.seq, type: event.type };
}
