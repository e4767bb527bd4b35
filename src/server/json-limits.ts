/*
 * A request body's nesting depth and value count, measured on the text before JSON.parse and zod see it:
 * one linear pass, no recursion, so a body of 100k nested brackets or a million tiny values is refused in
 * the time it takes to read it, and zod only ever walks a bounded tree.
 */

export interface JsonLimits {
  /** Deepest nesting of arrays and objects accepted. */
  maxDepth: number;
  /** Most values (objects, arrays, strings, numbers, literals) accepted in one body. */
  maxNodes: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = { maxDepth: 32, maxNodes: 10_000 };

const OPEN_BRACKET = 0x5b; // [
const OPEN_BRACE = 0x7b; // {
const CLOSE_BRACKET = 0x5d; // ]
const CLOSE_BRACE = 0x7d; // }
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const COMMA = 0x2c; // ,
const COLON = 0x3a; // :

/**
 * The first limit `text` goes over, as a sentence, or undefined. For text that is not JSON the counts are
 * rough (JSON.parse refuses it next); for JSON they are exact: every value is the first one, or follows a
 * `[` (a non-empty array's first element), a `,` inside an array, or a `:`.
 */
export function exceedsJsonLimits(text: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): string | undefined {
  // Open containers, innermost last: true for an array. Never longer than maxDepth.
  const open: boolean[] = [];
  let nodes = text.trim() === "" ? 0 : 1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
      continue;
    }
    if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACKET || code === OPEN_BRACE) {
      if (open.length === limits.maxDepth) return `the body nests deeper than ${limits.maxDepth} levels`;
      open.push(code === OPEN_BRACKET);
      if (code === OPEN_BRACKET && !closesNext(text, i + 1)) nodes++;
    } else if (code === CLOSE_BRACKET || code === CLOSE_BRACE) open.pop();
    else if ((code === COMMA && open.at(-1) === true) || code === COLON) nodes++;
    if (nodes > limits.maxNodes) return `the body has more than ${limits.maxNodes} values`;
  }
  return undefined;
}

/** True when the next non-blank character is `]` (an empty array). */
function closesNext(text: string, from: number): boolean {
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) continue;
    return code === CLOSE_BRACKET;
  }
  return false;
}
