import type { CallKind } from "./protocol.js";

/** Below this, a hook payload's `result` travels inside the payload and is parsed in the sandbox as usual. */
export const LAZY_RESULT_MIN_BYTES = 8192;

/** A callback's arguments as they travel: JSON text, and a big hook result apart from it. */
export interface EncodedArgs {
  args: string;
  /** JSON text of the hook payload's `result` (an object or array), which the script gets lazily. */
  lazy?: string;
  bytes: number;
}

/**
 * Serializes a callback's arguments. A hook payload's big `result` is sent as its own text: the sandbox
 * parses it only if the script looks inside, and splices the text back if the script returns it untouched
 * (runtime/lazy-json.ts), so passing a big tool result through a hook costs no parsing in the sandbox.
 */
export function encodeCallArgs(kind: CallKind, args: unknown[]): EncodedArgs {
  const payload = args[0] as { result?: unknown } | null | undefined;
  if (kind === "hook" && args.length === 1 && typeof payload?.result === "object" && payload.result !== null) {
    const lazy = JSON.stringify(payload.result) as string | undefined;
    if (typeof lazy === "string" && lazy.length >= LAZY_RESULT_MIN_BYTES && (lazy[0] === "{" || lazy[0] === "[")) {
      // An undefined property is left out by JSON.stringify: the payload without its result.
      const rest = JSON.stringify([{ ...payload, result: undefined }]);
      return { args: rest, lazy, bytes: rest.length + lazy.length };
    }
  }
  const text = JSON.stringify(args);
  return { args: text, bytes: text.length };
}

/**
 * A settled value whose `lazyKey` property held the call's lazy result untouched: the sandbox left it out
 * of `text` (an object's JSON) and the text that was sent goes back in. Key order is not kept.
 */
export function restoreLazy(text: string, lazyKey: string, lazy: string): string {
  const property = `${JSON.stringify(lazyKey)}:${lazy}`;
  return text === "{}" ? `{${property}}` : `{${property},${text.slice(1)}`;
}
