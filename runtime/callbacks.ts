import { describeThrown, guestError } from "./guest-errors.js";
import type { HostChannel, RuntimeLimits } from "./host-channel.js";
import {
  JSONParse,
  JSONStringify,
  PromiseCtor,
  PromisePrototypeThen,
  PromiseReject,
  PromiseResolve,
  ReflectApply,
  StringPrototypeSlice,
  defineData,
  dict,
} from "./primordials.js";
import type { LoadedScript } from "./script-definition.js";
import type { EncodedSettlement, RuntimeOps } from "../src/sandbox/wire/guest-ops.js";

type Call = RuntimeOps["call"];
type Resume = RuntimeOps["resume"];
import { lazyJson, type LazyJson } from "./lazy-json.js";
import { capabilityAttacher } from "./capabilities.js";
import { isGuestDataError, toBoundedJson } from "./serialize.js";

interface PendingRequest {
  requestId: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Capability requests one callback may have in flight at once (the worker holds it to the same bound). */
const MAX_PENDING_CAPABILITIES = 16;

interface ActiveCallback {
  settled: boolean;
  nextCalled: boolean;
  /** The host requests it awaits, by request id: at most one next() and a bounded number of capability requests. */
  pending: Record<number, PendingRequest>;
  pendingCapabilities: number;
  /** A hook payload's `result`, delivered unparsed (lazy-json.ts). */
  lazy: LazyJson | undefined;
}

type Fn = (...args: unknown[]) => unknown;

/**
 * Starts callbacks and settles them through the host channel. Results never leave as objects: a
 * callback's value is serialized by toBoundedJson inside the segment that produced it. Awaiting the host
 * means awaiting a promise made here, resolved by a later `resume` from the worker: code after the await
 * therefore runs inside a timed segment too.
 */
export function createCallbacks(host: HostChannel, limits: RuntimeLimits, script: () => LoadedScript | undefined) {
  const active = dict<ActiveCallback>();
  let nextRequestId = 0;

  /** The callback whose start() is running, and its settlement if it settled before start() returned. */
  let startingCallId = -1;
  let settledInStart: EncodedSettlement | undefined;

  /**
   * `lazyKey`: the property of the value that holds the call's lazy result untouched (left out of `text`).
   * A callback that settles while its start() still runs (a synchronous one) is answered through start()'s
   * return value (see `encodeSettlement`): one crossing back to the worker fewer.
   */
  function settle(callId: number, ok: boolean, text: string, lazyKey?: string): void {
    const call = active[callId];
    if (call === undefined || call.settled) return;
    call.settled = true;
    delete active[callId];
    if (callId === startingCallId) settledInStart = encodeSettlement(ok, text, lazyKey);
    else host("settle", callId, ok, text, lazyKey);
  }

  function settleValue(callId: number, value: unknown): void {
    let text: string;
    const lazy = active[callId]?.lazy;
    const splice: { key?: string } | undefined = lazy === undefined ? undefined : dict<string>();
    try {
      text = toBoundedJson(value, limits.maxPayloadBytes, lazy, splice);
    } catch (thrown) {
      settle(callId, false, describeThrown(thrown));
      return;
    }
    settle(callId, true, text, splice?.key);
  }

  function makeNext(callId: number, originalTurn: string): (turn?: unknown) => Promise<unknown> {
    return function next(turn?: unknown): Promise<unknown> {
      const call = active[callId];
      if (call === undefined || call.settled) return PromiseReject(guestError("next() was called after the middleware finished"));
      if (call.nextCalled) return PromiseReject(guestError("next() was called more than once in one middleware call"));
      let text = originalTurn;
      if (turn !== undefined) {
        try {
          text = toBoundedJson(turn, limits.maxPayloadBytes);
        } catch (thrown) {
          const problem = isGuestDataError(thrown)
            ? "next(turn): turn" + StringPrototypeSlice(thrown.path, 1) + " " + thrown.problem
            : "next(turn): the turn could not be serialized";
          return PromiseReject(guestError(problem, "HOOK_CONTRACT"));
        }
      }
      call.nextCalled = true;
      return request(call, callId, "next", text);
    };
  }

  /** One request to the host for `call`; resume() settles it. */
  function request(call: ActiveCallback, callId: number, op: "next" | "capability", text: string): Promise<unknown> {
    const requestId = ++nextRequestId;
    const promise = new PromiseCtor((resolve, reject) => {
      call.pending[requestId] = { requestId, resolve, reject };
    });
    host("request", callId, requestId, op, text);
    return promise;
  }

  function askCapability(callId: number): (text: string) => Promise<unknown> {
    return function (text: string): Promise<unknown> {
      const call = active[callId];
      if (call === undefined || call.settled)
        return PromiseReject(guestError("a capability was used after the callback finished", "CAPABILITY_DENIED"));
      if (call.pendingCapabilities >= MAX_PENDING_CAPABILITIES)
        return PromiseReject(
          guestError("more than " + MAX_PENDING_CAPABILITIES + " capability requests in flight in one callback", "CAPABILITY_QUOTA"),
        );
      call.pendingCapabilities++;
      const settleOne = (): void => {
        call.pendingCapabilities--;
      };
      return PromisePrototypeThen(
        request(call, callId, "capability", text),
        (value) => {
          settleOne();
          return value;
        },
        (error) => {
          settleOne();
          return PromiseReject(error);
        },
      );
    };
  }

  const attachCapabilities = capabilityAttacher(askCapability, limits.maxPayloadBytes);

  /** `lazyResult`: the JSON text of a hook payload's `result`, sent apart from the payload (see the host's call-args.ts). */
  function start(callId: Call[0], kind: Call[1], target: Call[2], argsJson: Call[3], lazyResult: Call[4]): EncodedSettlement | undefined {
    startingCallId = callId;
    settledInStart = undefined;
    try {
      run(callId, kind, target, argsJson, lazyResult);
    } finally {
      startingCallId = -1;
    }
    return settledInStart;
  }

  function run(callId: number, kind: string, target: string, argsJson: string, lazyResult: unknown): void {
    const loaded = script();
    const call: ActiveCallback = {
      settled: false,
      nextCalled: false,
      pending: dict<PendingRequest>(),
      pendingCapabilities: 0,
      lazy: undefined,
    };
    active[callId] = call;
    try {
      const table =
        loaded === undefined ? undefined : kind === "middleware" ? loaded.middleware : kind === "tool" ? loaded.tools : loaded.hooks;
      const fn: Fn | undefined = table === undefined ? undefined : table[target];
      if (fn === undefined) {
        settle(
          callId,
          false,
          JSONStringify({ code: "SCRIPT_ERROR", name: "Error", message: "the script has no " + kind + " named " + JSONStringify(target) }),
        );
        return;
      }
      const args = JSONParse(argsJson) as unknown[];
      if (kind === "hook" && typeof lazyResult === "string" && args[0] !== null && typeof args[0] === "object") {
        call.lazy = lazyJson(lazyResult);
        defineData(args[0], "result", call.lazy.value);
      }
      const ctx = kind === "hook" ? args[0] : args[1];
      if (ctx !== null && typeof ctx === "object") attachCapabilities(ctx, callId);
      const callArgs =
        kind === "middleware"
          ? [args[0], makeNext(callId, JSONStringify(args[0])), args[1]]
          : kind === "tool"
            ? [args[0], args[1]]
            : [args[0]];
      const returned = ReflectApply(fn, undefined, callArgs);
      if (
        returned !== null &&
        (typeof returned === "object" || typeof returned === "function") &&
        typeof (returned as { then?: unknown }).then === "function"
      ) {
        PromisePrototypeThen(
          PromiseResolve(returned),
          (value) => settleValue(callId, value),
          (thrown) => settle(callId, false, describeThrown(thrown)),
        );
      } else {
        settleValue(callId, returned);
      }
    } catch (thrown) {
      settle(callId, false, describeThrown(thrown));
    }
  }

  function resume(callId: Resume[0], requestId: Resume[1], ok: Resume[2], text: Resume[3]): void {
    const call = active[callId];
    if (call === undefined) return;
    const waiting = call.pending[requestId];
    if (waiting === undefined) return;
    delete call.pending[requestId];
    if (ok) {
      waiting.resolve(JSONParse(text));
    } else {
      const error = JSONParse(text) as { code?: string; message?: string };
      waiting.reject(
        guestError(
          typeof error.message === "string" ? error.message : "the host request failed",
          typeof error.code === "string" ? error.code : undefined,
        ),
      );
    }
  }

  function forget(callId: RuntimeOps["forget"][0]): void {
    delete active[callId];
  }

  return { start, resume, forget };
}

/** A settlement as start() returns it (the encoding: src/sandbox/wire/guest-ops.ts `EncodedSettlement`). */
function encodeSettlement(ok: boolean, text: string, lazyKey: string | undefined): EncodedSettlement {
  if (!ok) return `-${text}`;
  return lazyKey === undefined ? `+${text}` : `*${JSONStringify(lazyKey)}\u0000${text}`;
}
