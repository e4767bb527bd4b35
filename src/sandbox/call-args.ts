import type { Json } from "../turns/json.js";
import type { CallKind } from "./wire/protocol.js";
import { parseGuestJson } from "./validate.js";

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
export function encodeCallArgs(kind: CallKind, args: unknown[], lazyResult = true): EncodedArgs {
  const text = JSON.stringify(args);
  const payload = args[0] as { result?: unknown } | null | undefined;
  // The result's text is shorter than the whole payload's: under the bound, the payload travels whole, stringified once.
  if (
    text.length >= LAZY_RESULT_MIN_BYTES &&
    lazyResult &&
    kind === "hook" &&
    args.length === 1 &&
    typeof payload?.result === "object" &&
    payload.result !== null
  ) {
    const lazy = JSON.stringify(payload.result) as string | undefined;
    if (typeof lazy === "string" && lazy.length >= LAZY_RESULT_MIN_BYTES && (lazy[0] === "{" || lazy[0] === "[")) {
      // An undefined property is left out by JSON.stringify: the payload without its result.
      const rest = JSON.stringify([{ ...payload, result: undefined }]);
      return { args: rest, lazy, bytes: rest.length + lazy.length };
    }
  }
  return { args: text, bytes: text.length };
}

/** A hook payload's big `result` as the host keeps it while the call runs: its text, then its value. */
export class LazyResult {
  private parsed: Json | undefined;

  constructor(readonly text: string) {}

  /** Parses now, ahead of need: the host does it while it waits for a script that returns it untouched. */
  prefetch(): void {
    this.parsed ??= JSON.parse(this.text) as Json;
  }

  value(): Json {
    this.prefetch();
    return this.parsed!;
  }
}

// The plans, made once (one is looked up per hook call).
const LAZY = Object.freeze({ lazy: true, prefetch: false });
const LAZY_PREFETCHED = Object.freeze({ lazy: true, prefetch: true });
const EAGER = Object.freeze({ lazy: false, prefetch: false });

/** What a hook did with the last big result it got lazily. */
type ResultUseKind = "passes" | "ignores" | "reads";

/**
 * Decides, per script hook, how its next big result travels, from what it did with the last one: lazily
 * (the default, and for a hook that returned nothing), lazily and parsed ahead by the host while it waits
 * (a hook that passed the last one through untouched), or inside the payload (a hook that read it: the
 * proxy would only add work there). A hook that reads gets a lazy result again every 16th call, to notice
 * when it stops reading.
 */
export class ResultUse {
  private readonly hooks = new Map<string, { use: ResultUseKind; eagerCalls: number }>();

  /** How the next big result for `script`'s `hook` travels. */
  plan(script: string, hook: string): Readonly<{ lazy: boolean; prefetch: boolean }> {
    // No hook has had a big result yet (the usual case): no key to build for every call.
    if (this.hooks.size === 0) return LAZY;
    const seen = this.hooks.get(`${script}\0${hook}`);
    if (seen === undefined || seen.use === "ignores") return LAZY;
    if (seen.use === "passes") return LAZY_PREFETCHED;
    seen.eagerCalls++;
    return seen.eagerCalls % 16 === 0 ? LAZY : EAGER;
  }

  /** A hook that got a lazy result settled: `text` as returned ("" = nothing), `passed` if it returned the result untouched. */
  record(script: string, hook: string, text: string, passed: boolean): void {
    const use: ResultUseKind = passed ? "passes" : text === "" ? "ignores" : "reads";
    this.hooks.set(`${script}\0${hook}`, { use, eagerCalls: 0 });
  }
}

/** What a callback returned: JSON text ("" = nothing), and the lazy result it returned untouched, if any. */
export interface CallReply {
  text: string;
  /** The property of the returned object that held the lazy result: the sandbox left it out of `text`. */
  restore?: { key: string; value: Json };
}

/** The reply as a value (a restored property is defined, as JSON.parse would: `__proto__` included). */
export function replyValue(reply: CallReply): Json | undefined {
  const value = parseGuestJson(reply.text);
  if (reply.restore !== undefined && value !== null && typeof value === "object" && !Array.isArray(value)) {
    Object.defineProperty(value, reply.restore.key, { value: reply.restore.value, writable: true, enumerable: true, configurable: true });
  }
  return value;
}
