import type { HookCallRecord, ScriptVersionRecord } from "./policy-types.js";
import type { UsageDelta } from "./usage.js";

/*
 * What each kind of row adds to a tenant's stored bytes: its JSON text, counted the same way by every store
 * (events, snapshots and tool results count their JSON body in the stores themselves).
 */

/** A hook chain record: its decision and payload (the large part: a hook's payload can carry a whole tool result). */
export function hookCallBytes(call: Omit<HookCallRecord, "index">): number {
  const payload = call.payload === undefined ? 0 : JSON.stringify(call.payload).length;
  return JSON.stringify(call.decision).length + payload + call.callId.length + call.hook.length + call.verdict.length;
}

/** A stored script version: its files as uploaded, entry, warnings and bundle hash. */
export function scriptVersionBytes(version: Omit<ScriptVersionRecord, "version">): number {
  return (
    version.name.length +
    version.entry.length +
    JSON.stringify(version.files).length +
    JSON.stringify(version.warnings).length +
    version.bundleHash.length
  );
}

/** A usage ledger row (written with the event it is derived from, and charged with it). */
export function ledgerRowBytes(delta: UsageDelta | undefined): number {
  return delta === undefined ? 0 : JSON.stringify(delta).length;
}
