import type { z } from "zod";
import { isJson, type Json, type JsonObject } from "./json.js";

export type KeyFamily = "turn_data" | "turn_metadata" | "block_metadata" | "run_metadata";

/** Raised when a stored value does not match its key's schema, or a value to store is refused. */
export class TypedKeyError extends Error {
  readonly code = "TYPED_KEY";
  constructor(
    readonly keyId: string,
    message: string,
  ) {
    super(`${keyId}: ${message}`);
    this.name = "TypedKeyError";
  }
}

export type KeyLookup<T> = { found: true; value: T } | { found: false; reason: "missing" };

/**
 * A key with a versioned id (`namespace.value@vN`) that knows its value schema. Reads and writes go
 * through it so a wrong type is caught where it happens, not three phases later.
 */
export class TypedKey<T extends Json> {
  constructor(
    readonly id: string,
    readonly family: KeyFamily,
    readonly schema: z.ZodType<T>,
  ) {}

  /** `{found:false, reason:"missing"}` when absent; throws TypedKeyError when present but invalid. */
  lookup(bag: JsonObject): KeyLookup<T> {
    if (!Object.hasOwn(bag, this.id)) return { found: false, reason: "missing" };
    const parsed = this.schema.safeParse(bag[this.id]);
    if (!parsed.success) {
      throw new TypedKeyError(this.id, `stored value does not match its schema: ${parsed.error.issues[0]?.message ?? "invalid"}`);
    }
    return { found: true, value: parsed.data };
  }

  /** The value, or undefined when missing. */
  find(bag: JsonObject): T | undefined {
    const result = this.lookup(bag);
    return result.found ? result.value : undefined;
  }

  /** The value; throws TypedKeyError("missing") when absent. */
  get(bag: JsonObject): T {
    const result = this.lookup(bag);
    if (!result.found) throw new TypedKeyError(this.id, "missing");
    return result.value;
  }

  /** Stores `value` after checking it is JSON and matches the schema; on refusal nothing is stored. */
  set(bag: JsonObject, value: T): void {
    if (!isJson(value)) throw new TypedKeyError(this.id, "refused: value is not JSON");
    const parsed = this.schema.safeParse(value);
    if (!parsed.success) {
      throw new TypedKeyError(this.id, `refused: ${parsed.error.issues[0]?.message ?? "invalid value"}`);
    }
    bag[this.id] = parsed.data;
  }

  delete(bag: JsonObject): void {
    delete bag[this.id];
  }
}
