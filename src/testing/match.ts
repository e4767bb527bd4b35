import { HookboxError } from "../errors.js";
import { canonicalJson } from "../turns/json.js";

/*
 * What an expectation in a case file means (docs/policy-tests.md, "Matching"): a partial match. An object expects the
 * keys it names (others may be there), an array expects that many elements, each matched; a string written
 * `/pattern/flags` is a regular expression the text must match; any other value must be equal. An object whose
 * keys are all operators tests the value: `{"$gt": 100}`, `$gte`, `$lt`, `$lte`, `$ne`, `$eq` (equal as JSON
 * values, taken literally), `$match` (a pattern), `$exists` (true or false), `$not` (an expectation that must fail).
 */

export interface Mismatch {
  /** JSON path of the value that did not match (`$` for the whole). */
  path: string;
  expected: string;
  got: string;
}

const OPERATORS = new Set(["$gt", "$gte", "$lt", "$lte", "$ne", "$eq", "$match", "$exists", "$not"]);
const PATTERN = /^\/(.+)\/([dgimsuvy]*)$/s;

/** Every mismatch of `actual` against `expected` (none: it matches). */
export function match(expected: unknown, actual: unknown, path = "$"): Mismatch[] {
  if (isOperatorObject(expected)) return matchOperators(expected, actual, path);
  if (typeof expected === "string") {
    const pattern = patternOf(expected);
    if (pattern !== undefined) {
      return typeof actual === "string" && pattern.test(actual)
        ? []
        : [{ path, expected: `text matching ${expected}`, got: shown(actual) }];
    }
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [{ path, expected: `an array of ${expected.length}`, got: shown(actual) }];
    if (actual.length !== expected.length)
      return [
        { path, expected: `${expected.length} element${expected.length === 1 ? "" : "s"}`, got: `${actual.length}: ${shown(actual)}` },
      ];
    return expected.flatMap((element, index) => match(element, actual[index], `${path}[${index}]`));
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual))
      return [{ path, expected: "an object", got: shown(actual) }];
    return Object.entries(expected).flatMap(([key, value]) => {
      const own = Object.hasOwn(actual, key) ? (actual as Record<string, unknown>)[key] : undefined;
      if (isOperatorObject(value)) return matchOperators(value, own, `${path}.${key}`, Object.hasOwn(actual, key));
      if (!Object.hasOwn(actual, key)) return [{ path: `${path}.${key}`, expected: shown(value), got: "(absent)" }];
      return match(value, own, `${path}.${key}`);
    });
  }
  return Object.is(expected, actual) || (expected === 0 && actual === 0) ? [] : [{ path, expected: shown(expected), got: shown(actual) }];
}

/** Whether `value` is an operator object (`{"$gt": 1}`): a non-empty object whose keys are all operators. */
export function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => OPERATORS.has(key));
}

/** The regular expression of a `/pattern/flags` string; a bad pattern is a CONFIG error naming it. */
export function patternOf(text: string): RegExp | undefined {
  const found = PATTERN.exec(text);
  if (found === null) return undefined;
  try {
    return new RegExp(found[1]!, found[2]);
  } catch (error) {
    throw new HookboxError("CONFIG", `${text} is not a valid regular expression: ${(error as Error).message}`);
  }
}

/**
 * Problems of an expectation as written, before anything runs: bad patterns, unknown operators, operators
 * with the wrong kind of operand. Each names its path.
 */
export function expectationProblems(expected: unknown, path: string): string[] {
  if (typeof expected === "string") {
    try {
      patternOf(expected);
      return [];
    } catch (error) {
      return [`${path}: ${(error as Error).message}`];
    }
  }
  if (Array.isArray(expected)) return expected.flatMap((element, index) => expectationProblems(element, `${path}[${index}]`));
  if (expected === null || typeof expected !== "object") return [];
  const entries = Object.entries(expected);
  const operators = entries.filter(([key]) => key.startsWith("$"));
  if (operators.length > 0 && operators.length < entries.length)
    return [
      `${path}: an object mixes operators (${operators.map(([key]) => key).join(", ")}) with fields; use $eq to match such an object literally`,
    ];
  const unknown = operators.find(([key]) => !OPERATORS.has(key));
  if (unknown) return [`${path}: unknown operator ${unknown[0]} (known: ${[...OPERATORS].join(", ")})`];
  if (operators.length > 0)
    return operators.flatMap(([key, operand]) => {
      const at = `${path}.${key}`;
      if (["$gt", "$gte", "$lt", "$lte"].includes(key) && typeof operand !== "number" && typeof operand !== "string")
        return [`${at}: expected a number or a string to compare with`];
      if (key === "$match") {
        if (typeof operand !== "string") return [`${at}: expected a pattern (a string)`];
        try {
          new RegExp(PATTERN.exec(operand)?.[1] ?? operand, PATTERN.exec(operand)?.[2]);
        } catch (error) {
          return [`${at}: not a valid regular expression: ${(error as Error).message}`];
        }
        return [];
      }
      if (key === "$exists" && typeof operand !== "boolean") return [`${at}: expected true or false`];
      if (key === "$not") return expectationProblems(operand, at);
      return [];
    });
  return entries.flatMap(([key, value]) => expectationProblems(value, `${path}.${key}`));
}

function matchOperators(operators: Record<string, unknown>, actual: unknown, path: string, present = actual !== undefined): Mismatch[] {
  const failed: Mismatch[] = [];
  for (const [operator, operand] of Object.entries(operators)) {
    const fail = (expected: string) => failed.push({ path, expected, got: present ? shown(actual) : "(absent)" });
    switch (operator) {
      case "$exists":
        if (present !== operand) fail(operand ? "present" : "absent");
        break;
      case "$eq":
        if (canonicalJson(actual) !== canonicalJson(operand)) fail(`exactly ${shown(operand)}`);
        break;
      case "$ne":
        if (canonicalJson(actual) === canonicalJson(operand)) fail(`anything but ${shown(operand)}`);
        break;
      case "$match": {
        const text = operand as string;
        const pattern = patternOf(text) ?? new RegExp(text);
        if (typeof actual !== "string" || !pattern.test(actual)) fail(`text matching ${pattern}`);
        break;
      }
      case "$not":
        if (match(operand, actual, path).length === 0) fail(`not ${shown(operand)}`);
        break;
      default: {
        const symbol = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" }[operator as "$gt"];
        if (!compare(operator, actual, operand)) fail(`${symbol} ${shown(operand)}`);
      }
    }
  }
  return failed;
}

function compare(operator: string, actual: unknown, operand: unknown): boolean {
  if (typeof actual !== typeof operand || (typeof actual !== "number" && typeof actual !== "string")) return false;
  const a = actual as number | string;
  const b = operand as number | string;
  if (operator === "$gt") return a > b;
  if (operator === "$gte") return a >= b;
  if (operator === "$lt") return a < b;
  return a <= b;
}

/** A value as a line of output shows it: JSON, cut at 200 characters. */
export function shown(value: unknown): string {
  if (value === undefined) return "(nothing)";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 200)}… (${text.length} characters)` : text;
}
