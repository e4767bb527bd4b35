import type { HookboxError } from "../errors.js";
import type { CapabilityBroker } from "./api.js";
import type { CallReply, LazyResult } from "./call-args.js";
import type { CallLabel } from "./call-errors.js";
import type { GateCall } from "./callback-gate.js";
import type { DoneMessage } from "./wire/protocol.js";

/*
 * One callback (one guest call: a hook, a tool handler, a middleware), host side. It has one record per
 * stage: the run's `CallbackRequest`; once admitted (admission.ts), the `Callback` below, which the gate,
 * outcome dispatch and the loss of a worker act on; on the pipe, the `call` exec message
 * (wire/protocol.ts); back from the worker, a `CallbackOutcome`; to the run, a `CallReply` (call-args.ts).
 */

/** What a run asks its tenant sandbox for. */
export interface CallbackRequest extends CallLabel {
  args: unknown[];
  /** Middleware only: the rest of the chain, which the host runs when the script calls next(). */
  next?: (turnText: string) => Promise<string>;
}

/** The run a callback belongs to, as the tenant sandbox sees it. */
export interface CallbackRun {
  readonly runId: string;
  readonly capabilities?: CapabilityBroker;
  /** Adds the guest CPU a worker's reply to one of the run's messages reports to the run's total. */
  charge(done: DoneMessage): void;
}

/** An admitted callback, from admission until its outcome, its cancellation or its worker's loss ends it. */
export interface Callback extends CallbackRequest, GateCall {
  readonly callId: number;
  readonly run: CallbackRun;
  /** How deep in nested sandbox calls it was made (nested-calls.ts). */
  readonly depth: number;
  /** The payload's `result`, sent apart (call-args.ts), until the callback ends. */
  lazy?: LazyResult;
  /** Its requests to the host (next(), a capability) whose answers the worker has not replied to yet. */
  awaitingHost: number;
  resolve(reply: CallReply): void;
  reject(error: HookboxError): void;
}

/** A tenant's callbacks in progress, by id: each ends once, with its reply or its error. */
export class CallbacksInFlight {
  private readonly byId = new Map<number, Callback>();

  /** `onEnded`: called after each callback ends (the tenant may leave its worker then). */
  constructor(private readonly onEnded: () => void) {}

  get size(): number {
    return this.byId.size;
  }

  add(callback: Callback): void {
    this.byId.set(callback.callId, callback);
  }

  get(callId: number): Callback | undefined {
    return this.byId.get(callId);
  }

  /** A snapshot: ending callbacks while iterating it is safe. */
  all(): Callback[] {
    return [...this.byId.values()];
  }

  /** Whether a message of any callback in progress went to a worker (the tenant cannot move then). */
  anyPlaced(): boolean {
    for (const callback of this.byId.values()) if (callback.worker !== undefined) return true;
    return false;
  }

  finish(callback: Callback, reply: CallReply): void {
    if (!this.end(callback)) return;
    callback.resolve(reply);
    this.onEnded();
  }

  fail(callback: Callback, error: HookboxError): void {
    if (!this.end(callback)) return;
    callback.reject(error);
    this.onEnded();
  }

  private end(callback: Callback): boolean {
    if (callback.finished) return false;
    callback.finished = true;
    callback.lazy = undefined;
    this.byId.delete(callback.callId);
    return true;
  }
}
