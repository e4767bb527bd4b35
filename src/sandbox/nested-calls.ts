import { AsyncLocalStorage } from "node:async_hooks";
import { isHookboxError } from "../errors.js";
import type { CapabilityBroker } from "./api.js";

/*
 * Host code a sandboxed callback awaits (middleware `next()`) may call into the sandbox again: the chain
 * nests. Its depth travels with the async context, so a chain that nests too deep is refused wherever it
 * calls from (admission.ts checks it before a callback is queued).
 */
const chain = new AsyncLocalStorage<{ depth: number }>();

/** How deep the current host call chain is nested in sandbox callbacks (0 outside any). */
export function nestingDepth(): number {
  return chain.getStore()?.depth ?? 0;
}

/** How an awaiting callback is resumed: its request's JSON value, or `{code, message}` when !ok. */
export interface Resumption {
  ok: boolean;
  value: string;
}

/**
 * Runs the host's `next()` for a callback at `depth`, one level deeper, and says how to resume the
 * callback: with the turn text it produced (within `maxPayloadBytes`), or with the error it threw.
 */
export async function runNested(
  next: ((turnText: string) => Promise<string>) | undefined,
  turnText: string,
  depth: number,
  maxPayloadBytes: number,
): Promise<Resumption> {
  const failure = (code: string, message: string): Resumption => ({ ok: false, value: JSON.stringify({ code, message }) });
  if (next === undefined) return failure("SCRIPT_ERROR", "this callback cannot call next()");
  try {
    const text = await chain.run({ depth: depth + 1 }, () => next(turnText));
    if (text.length > maxPayloadBytes)
      return failure(
        "PAYLOAD_TOO_LARGE",
        `the turn from next() is ${text.length} bytes, over the sandbox's maxPayloadBytes of ${maxPayloadBytes}`,
      );
    return { ok: true, value: text };
  } catch (error) {
    return isHookboxError(error) ? failure(error.code, error.message) : failure("MIDDLEWARE", (error as Error)?.message ?? String(error));
  }
}

/**
 * Answers a capability request (`ctx.fetch`, `ctx.kv`, `ctx.model`) through the run's broker. The broker
 * validates the request and bounds its own time; a run without one refuses every capability.
 */
export async function serveCapability(
  broker: CapabilityBroker | undefined,
  request: { script: string; text: string },
  maxPayloadBytes: number,
): Promise<Resumption> {
  const failure = (code: string, message: string): Resumption => ({ ok: false, value: JSON.stringify({ code, message }) });
  if (broker === undefined) return failure("CAPABILITY_DENIED", "this run grants no capabilities (ctx.fetch, ctx.kv, ctx.model)");
  try {
    const value = JSON.stringify(await broker.serve(request));
    if (value.length > maxPayloadBytes) return failure("CAPABILITY_QUOTA", `the answer exceeds the ${maxPayloadBytes}-byte payload limit`);
    return { ok: true, value };
  } catch (error) {
    return isHookboxError(error)
      ? failure(error.code, error.message)
      : failure("CAPABILITY_FAILED", (error as Error)?.message ?? String(error));
  }
}
