import { ReflectApply } from "./primordials.js";

/*
 * The runtime tells its own error objects (GuestDataError, DefinitionError) from what a script threw by
 * identity, never with `instanceof` on the thrown value: that reads the value's prototype, which for a
 * proxy runs the script's trap, and a trap that throws or loops there would escape the runtime's handling
 * (and, thrown out of the isolate, be read by isolated-vm outside the call's time limit). A WeakSet lookup
 * runs no script code.
 */
const WeakSetCtor = WeakSet;
const weakSetAdd = WeakSet.prototype.add;
const weakSetHas = WeakSet.prototype.has;
const own = new WeakSetCtor<object>();

/** Records `error` (made by runtime code) as the runtime's own. */
export function markOwn(error: object): void {
  ReflectApply(weakSetAdd, own, [error]);
}

/** Whether `value` is an error the runtime made: safe on anything a script throws. */
export function isOwn(value: unknown): boolean {
  return value !== null && typeof value === "object" && (ReflectApply(weakSetHas, own, [value]) as boolean);
}
