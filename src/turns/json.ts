import { z } from "zod";

/** A JSON value: what every payload crossing a boundary must be. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const JsonSchema: z.ZodType<Json> = z.json() as z.ZodType<Json>;
export const JsonObjectSchema = z.record(z.string(), JsonSchema);

/** An object (not null, not an array) of a JSON.parse result: its values are JSON by construction. */
export function isParsedObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * True when `value` survives a JSON round trip unchanged: no functions, undefined, NaN or Infinity, class
 * instances or cycles. Checked by hand because z.json() accepts a cyclic object.
 */
export function isJson(value: unknown): value is Json {
  return isJsonValue(value, new Set());
}

function isJsonValue(value: unknown, ancestors: Set<object>): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object" || ancestors.has(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && prototype !== Object.prototype && prototype !== null) return false;
  ancestors.add(value);
  // Plain loops: a host tool's every result is checked, and a values array and a closure per object add up.
  let ok = true;
  if (Array.isArray(value)) {
    // A hole is skipped, as every() skips it.
    for (let index = 0; index < value.length && ok; index++)
      ok = (value[index] === undefined && !(index in value)) || isJsonValue(value[index], ancestors);
  } else {
    const record = value as Record<string, unknown>;
    for (const key in record) {
      if (!Object.hasOwn(record, key)) continue;
      if (!isJsonValue(record[key], ancestors)) {
        ok = false;
        break;
      }
    }
  }
  ancestors.delete(value);
  return ok;
}

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

/** One text per distinct JSON value, whatever the order of its objects' keys (`"undefined"` for undefined). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(withSortedKeys(value)) ?? "undefined";
}
