/*
 * The crossing between the runtime inside an isolate (runtime/) and the worker process that hosts it
 * (src/sandbox/worker/), both ways: the ops the worker calls the runtime's dispatcher with, the ops the
 * runtime calls the worker with, and the settlement a callback's start() returns. Types only, imported with `import type` on both sides: the runtime is bundled on its own
 * (dist/runtime.js), and a mismatch between what it sends and what the worker checks is a tsc error.
 */
import type { HostRequestOp } from "./protocol.js";

/** Log levels as they leave the isolate (console.log is "info"). */
export type GuestLogLevel = "debug" | "info" | "warn" | "error";

/**
 * Each op the worker calls the runtime's dispatcher with (runtime/bootstrap.ts `dispatch`), and its arguments
 * in order. The runtime's functions take their parameter types from these tuples.
 */
export interface RuntimeOps {
  /**
   * Runs the bundle's factory (the script's top-level code); returns the manifest as JSON, or the load error.
   * `forRun`: the context is a run's, whose manifest the host already has from the load: the answer is `{"ok":true}`.
   */
  register: [factory: unknown, forRun: boolean];
  /** Starts a callback; returns its `EncodedSettlement` when it settled before returning. */
  call: [callId: number, kind: string, target: string, argsJson: string, lazyResult: string | undefined];
  /** Answers a callback's request (next() or a capability). */
  resume: [callId: number, requestId: number, ok: boolean, text: string];
  /** The worker gave up on a callback: drop what the runtime keeps for it. */
  forget: [callId: number];
  /** What an instrumented bundle counted in this context, as JSON text (`"null"` when it counted nothing); resets its decision site. */
  coverage: [];
}

/** One call into the runtime, as the worker makes it. */
export type RuntimeOpCall = { [Op in keyof RuntimeOps]: [op: Op, ...args: RuntimeOps[Op]] }[keyof RuntimeOps];

/** Each op the runtime calls the worker with, and its arguments in order. */
export interface GuestOps {
  /**
   * A callback settled after its start() returned. `text`: the JSON value (ok) or the runtime's error
   * description (not ok); `lazyKey`: the property holding the call's lazy result, left out of `text`.
   */
  settle: [callId: number, ok: boolean, text: string, lazyKey: string | undefined];
  /** A callback asks the host (next() or a capability); the host answers with a resume message. */
  request: [callId: number, requestId: number, op: HostRequestOp, text: string];
  log: [level: GuestLogLevel, message: string];
}

/** tsc fails here if an op takes more arguments than the worker's handler has positions for. */
type FitsHandler<Ops extends { [Op in keyof Ops]: [unknown?, unknown?, unknown?, unknown?] }> = Ops;

/** One call into the worker, as the runtime makes it: the op name, then that op's arguments. */
export type GuestOpCall = { [Op in keyof GuestOps]: [op: Op, ...args: FitsHandler<GuestOps>[Op]] }[keyof GuestOps];

/** The worker's function as the runtime sees it (an isolated-vm Callback; its return value is unused). */
export type GuestChannel = (...call: GuestOpCall) => unknown;

/**
 * The same function as the worker implements it: every argument arrives as `unknown`, because guest code
 * may call it with anything; the worker checks each against `GuestOps` before use. Positional parameters
 * (no rest array) keep the per-call path free of allocations.
 */
export type GuestOpHandler = (op: unknown, a?: unknown, b?: unknown, c?: unknown, d?: unknown) => undefined;

/**
 * A settlement as a callback's start() returns it when the callback settled before start() returned (one
 * crossing fewer than a `settle` op): "+" JSON text, "-" error description, or "*" the lazy key's JSON,
 * NUL, JSON text (the key's JSON has no raw NUL). The runtime encodes it (runtime/callbacks.ts
 * `encodeSettlement`), the worker decodes it (src/sandbox/worker/guest-op-handler.ts `decodeSettlement`).
 */
export type EncodedSettlement = `+${string}` | `-${string}` | `*${string}\u0000${string}`;

/** A settlement as the worker decoded it; `lazyKey` is still untrusted (it came from guest code's isolate). */
export interface DecodedSettlement {
  ok: boolean;
  text: string;
  lazyKey?: unknown;
}
