/*
 * The one function the worker gives the runtime (an isolated-vm Callback). It is held in closures only,
 * never stored on a global. Every op it accepts is something a script may do anyway (settle its own
 * callback, ask for next(), log), and the worker validates every argument, so a script that somehow got
 * hold of it gains nothing.
 */
export type HostChannel = (op: string, a?: unknown, b?: unknown, c?: unknown, d?: unknown) => unknown;

export interface RuntimeLimits {
  /** Cap on every JSON payload leaving the isolate. */
  maxPayloadBytes: number;
  /** Cap on one log message. */
  maxLogChars: number;
}
