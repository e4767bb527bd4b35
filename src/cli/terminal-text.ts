/*
 * Text from scripts, tools and the model reaches a person's terminal in the human transcript and the approval
 * prompt. A terminal acts on control characters: ESC sequences and OSC (colours, a window title, a screen clear,
 * a cursor moved up to overwrite the arguments a person is asked to approve), 8-bit C1 controls, and bidi
 * overrides that reorder what is shown. So every such character is shown escaped, as a JSON string would write
 * it (`\u001b`, `\n`), which keeps edited JSON arguments valid JSON.
 */

/** C0 and DEL, C1, the bidi marks, embeddings, overrides and isolates, and the Unicode line and paragraph separators. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const CONTROL_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function escaped(char: string): string {
  return SHORT[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/** `text` with every control character escaped: it prints as one line and moves nothing on the screen. */
export function printable(text: string): string {
  return text.replace(CONTROL, escaped);
}

/**
 * Text that may span lines (the model's answer): its line breaks are kept, each following line indented by
 * `indent` so it reads as part of its entry; every other control character is escaped.
 */
export function printableLines(text: string, indent: string): string {
  return text.replace(CONTROL_BUT_NEWLINE, escaped).replace(/\n/g, `\n${indent}`);
}
