/*
 * Evaluated first in every fresh context, in strict mode, before any script code (see primordials.ts).
 * The worker calls `install(host, limits)` and keeps the returned dispatcher; scripts never see either.
 * Everything that leaves the isolate is a string made here: bounded JSON, or a JSON error description.
 */
import { installConsole } from "./console.js";
import { describeThrown, unreadable } from "./guest-errors.js";
import { isGuestDataError, toBoundedJson } from "./serialize.js";
import { refuseResizableArrayBuffers } from "./array-buffers.js";
import type { HostChannel, RuntimeLimits } from "./host-channel.js";
import { createHookboxModule } from "./hookbox-module.js";
import { createCallbacks } from "./callbacks.js";
import { isDefinitionError, readDefinition, type LoadedScript } from "./script-definition.js";
import { JSONParse, JSONStringify, ReflectApply, StringPrototypeSlice, globalObject } from "./primordials.js";
import { MAX_ERROR_MESSAGE_CHARS } from "../src/sandbox/wire/error-limits.js";
import { readCoverage } from "./coverage.js";
import type { RuntimeOpCall, RuntimeOps } from "../src/sandbox/wire/guest-ops.js";

refuseResizableArrayBuffers();

/**
 * Deliberately absent (docs/sandbox.md): shared memory and Atomics.wait could block or time a worker thread outside
 * our control, WebAssembly compiles machine code from script input, and a FinalizationRegistry's cleanup callbacks
 * are script code V8 may run when no call of ours is timing the isolate. Deleted by `install`, in each context:
 * the worker makes contexts from a snapshot with this top level already run (src/sandbox/worker/runtime-snapshot.ts),
 * and V8 installs some of these globals again in each context it makes from one.
 */
function deleteAbsentGlobals(): void {
  const global = globalObject as Record<string, unknown>;
  delete global.SharedArrayBuffer;
  delete global.Atomics;
  delete global.WebAssembly;
  delete global.FinalizationRegistry;
}

/** A registration that failed: the message is clipped like every error text that leaves the isolate. */
function loadError(message: string): string {
  return (
    '{"ok":false,"error":{"code":"SCRIPT_LOAD","message":' + JSONStringify(StringPrototypeSlice(message, 0, MAX_ERROR_MESSAGE_CHARS)) + "}}"
  );
}

/** The runtime's entry point: the worker calls it with one `RuntimeOpCall` (wire/guest-ops.ts), spread. */
export type Dispatcher = (...call: RuntimeOpCall) => string | undefined;

/** The arguments of one op, as the worker sends them (the worker is trusted; the casts below rest on it). */
type Ops<Op extends keyof RuntimeOps> = RuntimeOps[Op];

export function install(host: HostChannel, limitsJson: string): Dispatcher {
  deleteAbsentGlobals();
  const limits = JSONParse(limitsJson) as RuntimeLimits;
  installConsole(host, limits);
  const hookboxModule = createHookboxModule();
  let loaded: LoadedScript | undefined;
  const callbacks = createCallbacks(host, limits, () => loaded);

  /**
   * Runs the bundle's factory (the script's top-level code) and validates its default export. The text it returns
   * is at most the tenant's maxPayloadBytes (plus a few bytes of framing): the manifest is the script's text (names,
   * descriptions, schemas, onHookError), and a bigger one would outgrow the worker's reply frame, which the host
   * answers by killing the worker with every co-tenant's call on it. It is built from strings, never by serializing
   * a runtime-made object: Object.prototype.toJSON, which a script may have set, is not consulted.
   */
  function register(factory: Ops<"register">[0], forRun: Ops<"register">[1]): string {
    try {
      if (typeof factory !== "function") return loadError("bundle did not evaluate to a factory");
      const namespace = ReflectApply(factory, undefined, [hookboxModule]) as { default?: unknown } | undefined;
      const exported = namespace === undefined || namespace === null ? undefined : namespace.default;
      if (exported === undefined) return loadError("the script has no default export: write `export default defineScript({...})`");
      // A run's context needs the callables only: its manifest (the tools' schemas serialized) is the load's.
      const { script, manifest } = readDefinition(exported, limits.maxPayloadBytes, !forRun);
      if (forRun) {
        loaded = script;
        return '{"ok":true}';
      }
      const text = toBoundedJson(manifest, limits.maxPayloadBytes);
      loaded = script;
      return '{"ok":true,"manifest":' + text + "}";
    } catch (thrown) {
      if (isDefinitionError(thrown)) return loadError(thrown.message);
      if (isGuestDataError(thrown))
        return loadError("the script's manifest (names, descriptions, schemas, onHookError): " + thrown.path + " " + thrown.problem);
      return '{"ok":false,"error":' + describeThrown(thrown, "SCRIPT_LOAD") + "}";
    }
  }

  /*
   * Nothing a script throws leaves dispatch: isolated-vm would read a value thrown out of the isolate (its
   * message, its stack: getters, traps) after the call's timeout stopped counting. Each op catches what
   * its own handling let through, without touching it.
   * Positional parameters, not a destructured rest tuple: destructuring reads Array.prototype[Symbol.iterator],
   * which a script can replace with a function that throws such a value before any op's catch is entered.
   */
  return function dispatch(op: RuntimeOpCall[0], a?: unknown, b?: unknown, c?: unknown, d?: unknown, e?: unknown): string | undefined {
    switch (op) {
      case "register":
        try {
          return register(a as Ops<"register">[0], b === true);
        } catch {
          return '{"ok":false,"error":' + unreadable("SCRIPT_LOAD") + "}";
        }
      case "call":
        try {
          return callbacks.start(a as Ops<"call">[0], b as Ops<"call">[1], c as Ops<"call">[2], d as Ops<"call">[3], e as Ops<"call">[4]);
        } catch {
          callbacks.forget(a as Ops<"call">[0]);
          return "-" + unreadable("SCRIPT_ERROR");
        }
      case "resume":
        try {
          callbacks.resume(a as Ops<"resume">[0], b as Ops<"resume">[1], c as Ops<"resume">[2], d as Ops<"resume">[3]);
        } catch {
          // the callback is then neither settled nor waiting: the worker fails it as never settling
        }
        return undefined;
      case "forget":
        callbacks.forget(a as Ops<"forget">[0]);
        return undefined;
      case "coverage":
        return readCoverage();
    }
  };
}
