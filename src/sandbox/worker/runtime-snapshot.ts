import ivm from "isolated-vm";

/**
 * Every run's context gets the runtime (runtime/) evaluated in it before any script code. Evaluating its top level
 * in each new context cost about 170 us of the worker's CPU a context; so the worker evaluates it once, at start,
 * into a V8 startup snapshot (isolated-vm's `createSnapshot`), and every tenant isolate is made from that snapshot:
 * each context it makes starts as a copy of the snapshot's context, the runtime's top level already run there
 * (its captured built-ins, its constants, the ArrayBuffer stand-in), each copy with objects of its own. What V8
 * puts back into each new context after the copy (some of its built-ins are installed per context, which is why
 * `install` deletes the absent globals, runtime/bootstrap.ts) and `install` itself run per context, as before.
 *
 * The snapshot holds only the worker's own code (dist/runtime.js), never a tenant's, and stays in this process.
 */

/** Where the snapshot's context keeps `install` until the worker takes it; no script code has run by then. */
const INSTALL_GLOBAL = "__hookbox_install__";

/** The file name of the runtime's code in stacks (call-errors.ts drops frames of it from what a script author sees). */
export const RUNTIME_FILENAME = "hookbox-runtime.js";

/**
 * Run in each new context before anything else: its value is the runtime's `install`, and the global that held it
 * is gone before the script's code runs (it was configurable and nothing else has run in the context).
 */
export const TAKE_INSTALL_SOURCE = `(function () { "use strict"; const install = globalThis.${INSTALL_GLOBAL}; delete globalThis.${INSTALL_GLOBAL}; return install; })()`;

/**
 * A script of the worker's own, run once in a throwaway context of the snapshot's isolate: V8 keeps the functions
 * an install, a register and a hook call compiled in the snapshot, so a new isolate does not compile them again.
 */
const WARM_UP_SOURCE = `(function () { "use strict";
  const install = globalThis.${INSTALL_GLOBAL};
  const dispatch = install(function () {}, '{"maxPayloadBytes":1048576,"maxLogChars":1024}');
  dispatch("register", function () { return { default: { hooks: { beforeToolCall() { return { action: "proceed" }; } } } }; }, true);
  dispatch("call", 1, "hook", "beforeToolCall", '[{"phase":"beforeToolCall"}]', undefined);
})()`;

/** A startup snapshot whose context has the runtime evaluated; `runtime` is dist/runtime.js's text. */
export function makeRuntimeSnapshot(runtime: string): ivm.ExternalCopy<ArrayBuffer> {
  const code =
    `(function () { "use strict";\n${runtime}\n` +
    `Object.defineProperty(globalThis, "${INSTALL_GLOBAL}", { value: __hookboxBootstrap.install, configurable: true }); })();`;
  return ivm.Isolate.createSnapshot([{ code, filename: RUNTIME_FILENAME }], WARM_UP_SOURCE);
}
