import { RE2JS } from "re2js";
import type { Options } from "ajv";

type RegExpEngine = NonNullable<NonNullable<Options["code"]>["regExp"]>;
type RegExpLike = ReturnType<RegExpEngine>;

/**
 * Compiles a JSON Schema `pattern` (JavaScript syntax) for RE2, whose matching time is linear in the input:
 * a pattern written to backtrack catastrophically costs the host no more than any other. Throws when RE2
 * cannot express the pattern (lookaround, backreferences).
 */
export function compileLinear(pattern: string): RegExpLike {
  const compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
  const linear = { test: (text: string) => compiled.test(text), toString: () => `re2:${pattern}` };
  // ajv keys its compiled patterns by toString(): it must differ between patterns.
  return linear;
}

/** Why RE2 refuses a pattern, or undefined when it accepts it. */
export function linearPatternProblem(pattern: string): string | undefined {
  try {
    compileLinear(pattern);
    return undefined;
  } catch {
    return "uses a construct the linear-time regex engine (RE2) does not support, such as lookaround or a backreference";
  }
}

/** ajv's `code.regExp`: every `pattern` and `patternProperties` key runs on RE2. */
export const linearRegExpEngine: RegExpEngine = Object.assign((pattern: string) => compileLinear(pattern), {
  code: "hookbox.linearRegExp",
});
