import type { Json, JsonObject } from "./json.js";
import { deepFreeze } from "./deep-freeze.js";
import { keepJson } from "./known-json.js";
import { TypedKeyError, type TypedKey } from "./typed-key.js";

/**
 * A value checked once against its key's schema and deeply frozen (`shareValue`), so many bags (one per run) can
 * hold the same copy: nothing can change it in place, and a bag gets it without a parse.
 */
export interface SharedValue<T extends Json> {
  readonly keyId: string;
  readonly value: T;
}

/** The SharedValues `shareValue` made: `setSharedValue` takes no other, so nothing unchecked gets in through it. */
const madeHere = new WeakSet<SharedValue<Json>>();

/** Checks `value` as `key.set` does, once, and returns it deeply frozen for `setSharedValue`. */
export function shareValue<T extends Json>(key: TypedKey<T>, value: T): SharedValue<T> {
  const bag: JsonObject = {};
  key.set(bag, value);
  const checked = bag[key.id] as T;
  // Serialized now, while plain: every run's turn holds it, and its head is serialized at every snapshot.
  if (checked !== null && typeof checked === "object") keepJson(checked, JSON.stringify(checked));
  const shared: SharedValue<T> = Object.freeze({ keyId: key.id, value: deepFreeze(checked) });
  madeHere.add(shared);
  return shared;
}

/** Stores under `key` a value `shareValue` checked and froze for that key; anything else is refused. */
export function setSharedValue<T extends Json>(key: TypedKey<T>, bag: JsonObject, shared: SharedValue<T>): void {
  if (!madeHere.has(shared) || shared.keyId !== key.id) {
    throw new TypedKeyError(key.id, "refused: not a value shareValue() checked for this key");
  }
  bag[key.id] = shared.value;
}
