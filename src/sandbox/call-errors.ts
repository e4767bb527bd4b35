import { hookContractError, HookboxError, type SerializedError } from "../errors.js";
import { sourceMapFor } from "./bundle-output.js";
import type { CallKind } from "./wire/protocol.js";
import { remapStack } from "./source-map.js";

export interface CallLabel {
  script: string;
  kind: CallKind;
  target: string;
}

export function describeCall(label: CallLabel): string {
  return label.kind === "hook" ? label.target : `${label.kind} ${label.target}`;
}

/** The author's position of the first frame of their own code in a (remapped) stack. */
function firstUserFrame(stack: string): string | undefined {
  for (const line of stack.split("\n").slice(1)) {
    if (line.includes("hookbox-runtime.js")) continue;
    const match = /\(?([^\s()]+:\d+:\d+)\)?\s*$/.exec(line.trim());
    if (match) return match[1];
  }
  return undefined;
}

/**
 * Rebuilds a failure reported by the worker as the HookboxError the loop sees: script errors get their
 * stack remapped to the author's files (`policy.ts:12:5`), contract violations name script, hook and path.
 */
export function reviveCallError(error: SerializedError, label: CallLabel): HookboxError {
  const details = { ...(error.details ?? {}), script: label.script, [label.kind]: label.target };
  if (error.code === "HOOK_CONTRACT" && typeof details.path === "string") {
    return hookContractError(label.script, describeCall(label), details.path, error.message);
  }
  if (error.code === "PAYLOAD_TOO_LARGE") {
    // The runtime says "$.result is larger than the N-byte limit"; the worker's own check "returned N bytes, over ...".
    const what = typeof details.path === "string" && details.path !== "$" ? `${details.path} ` : "";
    return new HookboxError(
      "PAYLOAD_TOO_LARGE",
      `${label.script}: ${describeCall(label)} returned a value over the sandbox's maxPayloadBytes: ${what}${error.message}`,
      details,
    );
  }
  if (error.code === "SCRIPT_ERROR" && typeof details.stack === "string") {
    const stack = remapStack(details.stack, sourceMapFor);
    const location = firstUserFrame(stack);
    const message = remapStack(error.message, sourceMapFor);
    return new HookboxError(
      "SCRIPT_ERROR",
      `${label.script}: ${describeCall(label)} threw ${message}${location ? ` (at ${location})` : ""}`,
      { ...details, stack, ...(location ? { location } : {}) },
    );
  }
  if (error.code === "SCRIPT_ERROR" && !error.message.startsWith(label.script)) {
    return new HookboxError("SCRIPT_ERROR", `${label.script}: ${describeCall(label)} threw ${error.message}`, details);
  }
  return new HookboxError(error.code as HookboxError["code"], error.message, details);
}

/** A load failure: the stack of a throwing top level, remapped. */
export function reviveLoadError(error: SerializedError, displayPath: string): HookboxError {
  const stack = typeof error.details?.stack === "string" ? remapStack(error.details.stack, sourceMapFor) : undefined;
  const location = stack ? firstUserFrame(stack) : undefined;
  return new HookboxError(
    "SCRIPT_LOAD",
    `${displayPath}: ${remapStack(error.message, sourceMapFor)}${location ? ` (at ${location})` : ""}`,
    {
      ...(error.details ?? {}),
      ...(error.code !== "SCRIPT_LOAD" ? { cause: error.code } : {}),
      file: displayPath,
      ...(stack ? { stack } : {}),
    },
  );
}
