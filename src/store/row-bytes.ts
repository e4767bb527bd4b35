import type { HookCallRecord, ScriptVersionRecord } from "./policy-types.js";
import type { UsageDelta } from "./usage.js";
import type { HookCallWrite, RunWrite } from "./types.js";

/*
 * What each kind of row adds to a tenant's stored bytes: its JSON text, counted the same way by every store
 * (events, snapshots and tool results count their JSON body in the stores themselves).
 */

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

/** A hook chain record: its decision and payload (the large part: a hook's payload can carry a whole tool result). */
export function hookCallWriteBytes(call: HookCallWrite): number {
  return call.decisionJson.length + (call.payloadJson?.length ?? 0) + call.callId.length + call.hook.length + call.verdict.length;
}

/** A hook chain record with its texts, made once. */
export function hookCallWrite(call: Omit<HookCallRecord, "index" | "runId">): HookCallWrite {
  return {
    callId: call.callId,
    hook: call.hook,
    attempt: call.attempt,
    shadow: call.shadow,
    verdict: call.verdict,
    decisionJson: JSON.stringify(call.decision),
    ...(call.payload === undefined ? {} : { payloadJson: JSON.stringify(call.payload) }),
  };
}

/** A snapshot row: its layout and head texts (its new blocks are counted as log rows). */
export function snapshotRowBytes(segmentsJson: string, headJson: string | undefined): number {
  return segmentsJson.length + (headJson?.length ?? 0);
}

/** About how much text a run write carries (what group commit bounds a transaction by). */
export function runWriteBytes(write: RunWrite): number {
  let bytes = 0;
  for (const { json } of write.events ?? []) bytes += json.length;
  for (const result of write.toolResults ?? []) bytes += result.blockJson.length;
  for (const call of write.hookCalls ?? []) bytes += hookCallWriteBytes(call);
  for (const piece of write.snapshot?.pieces ?? []) if ("append" in piece) for (const text of piece.append) bytes += text.length;
  return bytes;
}
