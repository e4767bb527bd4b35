import type { FuncKeywordDefinition } from "ajv";

/** The same JSON value always gives the same text: object keys sorted, so `{a,b}` and `{b,a}` compare equal. */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`)
    .join(",")}}`;
}

/** One pass over the items, each hashed once: linear where ajv's own check compares every pair. */
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
