import { z } from "zod";
import { JsonObjectSchema, JsonSchema } from "../turns/json.js";

/*
 * Values from the sandbox arrive as text made by JSON.stringify inside the isolate and are parsed by
 * JSON.parse here: every leaf is already JSON by construction. Re-checking "is this JSON" deep inside a
 * 100 KB tool result is most of the validation cost, so these derived schemas keep every structural
 * check of the contract and trust JSON leaves. Only ever use them on JSON.parse output.
 */

const present = z.custom<unknown>((value) => value !== undefined);
// A JSON.parse object is a plain object of JSON values: one check, not one per key (a record schema costs
// microseconds per key, seconds for an `args` of 100k keys).
const jsonObject = z.custom<Record<string, unknown>>((value) => value !== null && typeof value === "object" && !Array.isArray(value));

interface Def {
  type: string;
  innerType?: z.ZodType;
  options?: z.ZodType[];
  shape?: Record<string, z.ZodType>;
  catchall?: { _zod: { def: { type: string } } };
}

export function trustJsonLeaves<T extends z.ZodType>(schema: T): T {
  return derive(schema) as unknown as T;
}

function derive(schema: z.ZodType): z.ZodType {
  if (schema === (JsonSchema as z.ZodType)) return present;
  if (schema === (JsonObjectSchema as z.ZodType)) return jsonObject;
  const def = (schema as unknown as { _zod: { def: Def } })._zod.def;
  switch (def.type) {
    case "optional":
      return derive(def.innerType!).optional();
    case "union":
      return z.union(def.options!.map(derive) as [z.ZodType, z.ZodType, ...z.ZodType[]]);
    case "object": {
      const shape = Object.fromEntries(Object.entries(def.shape!).map(([key, value]) => [key, derive(value)]));
      return def.catchall?._zod.def.type === "never" ? z.strictObject(shape) : z.object(shape);
    }
    default:
      return schema;
  }
}
