import { z } from "zod";

/** A JSON value: what every payload crossing a boundary must be. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export const JsonSchema: z.ZodType<Json> = z.json() as z.ZodType<Json>;
export const JsonObjectSchema = z.record(z.string(), JsonSchema);

/** True when `value` survives a JSON round trip unchanged (no functions, cycles, NaN, class instances...). */
export function isJson(value: unknown): value is Json {
  return JsonSchema.safeParse(value).success;
}
