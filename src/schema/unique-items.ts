import type { FuncKeywordDefinition } from "ajv";
import { canonicalJson } from "../turns/json.js";

/** One pass over the items, each serialized once: linear where ajv's own check compares every pair. */
export function allUnique(items: readonly unknown[]): boolean {
  const seen = new Set<string>();
  for (const item of items) {
    const key = canonicalJson(item);
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

/** Replaces ajv's `uniqueItems` (quadratic on object items) with the linear check above. */
export const linearUniqueItems: FuncKeywordDefinition = {
  keyword: "uniqueItems",
  type: "array",
  schemaType: "boolean",
  errors: false,
  validate: (unique: boolean, items: unknown[]) => !unique || allUnique(items),
};
