import type { FuncKeywordDefinition } from "ajv";

/**
 * The value itself when every object in it already has its keys in sorted order (the usual case), else
 * a copy whose objects do: so JSON.stringify, native and fast, gives one text per distinct JSON value.
 */
function withSortedKeys(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = withSortedKeys(value[i]);
      if (item !== value[i]) (copy ??= value.slice())[i] = item;
    }
    return copy ?? value;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let changed = false;
  for (let i = 1; i < keys.length && !changed; i++) changed = keys[i - 1]! > keys[i]!;
  const children = keys.map((key) => withSortedKeys(record[key]));
  if (!changed && children.every((child, i) => child === record[keys[i]!])) return value;
  const copy: Record<string, unknown> = {};
  for (const i of keys.map((_, index) => index).sort((a, b) => (keys[a]! < keys[b]! ? -1 : 1))) copy[keys[i]!] = children[i];
  return copy;
}

/** One pass over the items, each serialized once: linear where ajv's own check compares every pair. */
export function allUnique(items: readonly unknown[]): boolean {
  const seen = new Set<string>();
  for (const item of items) {
    const key = JSON.stringify(withSortedKeys(item)) ?? "undefined";
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
