import type { HookboxEvent } from "./types.js";

/*
 * An event becomes JSON text once, when it is emitted: the store writes these bytes, every stream reader
 * (SSE, the library's live readers) sends them and `--json` prints them, with no per-reader copy. The text
 * is the event as emitted: a reader that later changes its own event object changes nothing that is sent.
 */

const texts = new WeakMap<HookboxEvent, string>();

/** The event's JSON text, made on the first call for this event object. */
export function eventJson(event: HookboxEvent): string {
  let text = texts.get(event);
  if (text === undefined) {
    text = JSON.stringify(event);
    texts.set(event, text);
  }
  return text;
}

/** An event parsed from stored text keeps that text (read back, it is sent as stored). */
export function withEventJson(event: HookboxEvent, json: string): HookboxEvent {
  texts.set(event, json);
  return event;
}
