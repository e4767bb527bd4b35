import { HookboxError } from "../errors.js";
import type { LogEntry } from "./api.js";
import type { ResultUse } from "./call-args.js";
import { describeCall, reviveCallError } from "./call-errors.js";
import type { Callback, CallbacksInFlight } from "./callback.js";
import type { CallbackGate } from "./callback-gate.js";
import { runNested, serveCapability, type Resumption } from "./nested-calls.js";
import type { DoneMessage, HostRequestOp } from "./wire/protocol.js";

export interface OutcomeDispatchOptions {
  tenant: string;
  callbacks: CallbacksInFlight;
  gate: CallbackGate;
  resultUse: ResultUse;
  maxPayloadBytes: number;
  /** Where a run's logs go (undefined: the run is closed, its logs are dropped). */
  logsOf(runId: string): ((entry: LogEntry) => void) | undefined;
  /** The worker reported a bound breached by the tenant's code (the tenant runs apart from now on). */
  quarantine(): void;
  /** Longest a resumed segment may run in the worker, ms. */
  segmentBudgetMs(): number;
}

/**
 * What a worker's `done` reply means for the tenant: each log goes to its run, each callback outcome to its
 * callback (settled, failed, or a request for the host, answered with a `resume` exec message).
 */
export class OutcomeDispatch {
  constructor(private readonly options: OutcomeDispatchOptions) {}

  /**
   * `call`: the callback the replied message was for. Its segment ends with it settled, failed, or awaiting the
   * host (a real worker fails a callback that awaits nothing the host can answer): a reply that leaves it none of
   * these would leave its caller waiting for good, so it is a breach like any other lie (the worker is killed,
   * every call on it fails closed).
   */
  onDone(done: DoneMessage, call?: Callback): void {
    this.dispatch(done);
    if (call !== undefined && !call.finished && call.awaitingHost === 0)
      call.worker?.brokeProtocol(`its reply to message ${done.seq} left ${call.script}: ${describeCall(call)} unanswered`);
  }

  private dispatch(done: DoneMessage): void {
    const { callbacks } = this.options;
    if (done.breach !== undefined) this.options.quarantine();
    for (const log of done.logs) {
      // The tenant is the one whose message this replies to, whatever the worker says.
      this.options.logsOf(log.runId)?.({ script: log.script, tenant: this.options.tenant, level: log.level, message: log.message });
    }
    for (const outcome of done.outcomes) {
      const callback = callbacks.get(outcome.callId);
      if (callback === undefined) continue;
      if (outcome.type === "settled") this.settle(callback, outcome.value, outcome.lazyKey);
      else if (outcome.type === "failed") callbacks.fail(callback, reviveCallError(outcome.error, callback));
      else this.serveRequest(callback, outcome.requestId, outcome.op, outcome.value);
    }
  }

  /** A settled callback's reply: its text, and the lazy result it returned untouched, restored under `lazyKey`. */
  private settle(callback: Callback, text: string, lazyKey: string | undefined): void {
    const { callbacks } = this.options;
    if (callback.lazy !== undefined) this.options.resultUse.record(callback.script, callback.target, text, lazyKey !== undefined);
    if (lazyKey === undefined) callbacks.finish(callback, { text });
    else if (callback.lazy !== undefined && text.startsWith("{"))
      callbacks.finish(callback, { text, restore: { key: lazyKey, value: callback.lazy.value() } });
    else
      callbacks.fail(
        callback,
        new HookboxError("SANDBOX_CRASHED", `${callback.script}: ${describeCall(callback)}: the sandbox returned a broken value`),
      );
  }

  /**
   * The callback awaits the host: next() runs inside the caller's chain, a capability request goes to the
   * run's broker. Either way the callback does not hold the gate meanwhile, and is resumed with the result
   * ahead of the callbacks waiting for the gate.
   */
  private serveRequest(callback: Callback, requestId: number, op: HostRequestOp, text: string): void {
    const { maxPayloadBytes, gate, callbacks, tenant } = this.options;
    callback.awaitingHost++;
    const answer: Promise<Resumption> =
      op === "capability"
        ? serveCapability(callback.run.capabilities, { script: callback.script, text }, maxPayloadBytes)
        : runNested(callback.next, text, callback.depth, maxPayloadBytes);
    void answer.then(({ ok, value }) =>
      gate.enqueue(
        {
          call: callback,
          send: (worker) => {
            if (worker !== callback.worker)
              throw new HookboxError("SANDBOX_CRASHED", "the sandbox worker changed under an awaiting callback");
            const resume = { type: "resume" as const, tenant, callId: callback.callId, requestId, op, ok, value };
            // Once the worker answers the resume, it holds the answer: that reply settles the callback or asks again
            // (or the callback still awaits other answers). A refused resume still awaits the host: it is sent again.
            return worker.exec(resume, this.options.segmentBudgetMs()).then((done) => {
              callback.awaitingHost--;
              return done;
            });
          },
          fail: (error) => callbacks.fail(callback, error),
        },
        true,
      ),
    );
  }
}
