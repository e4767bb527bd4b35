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
  const ok = (Array.isArray(value) ? value : Object.values(value)).every((inner) => isJsonValue(inner, ancestors));
  ancestors.delete(value);
  return ok;
}
