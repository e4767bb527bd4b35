/*
 * The one function the worker gives the runtime (an isolated-vm Callback). It is held in closures only,
 * never stored on a global. Every op it accepts is something a script may do anyway (settle its own
 * callback, ask for next(), log), and the worker validates every argument, so a script that somehow got
 * hold of it gains nothing. Its ops and their arguments: src/sandbox/wire/guest-ops.ts.
 */
export type { GuestChannel as HostChannel } from "../src/sandbox/wire/guest-ops.js";

export interface RuntimeLimits {
  /** Cap on every JSON payload leaving the isolate. */
  maxPayloadBytes: number;
  /** Cap on one log message. */
  maxLogChars: number;
}
