import type { EventLog } from "./event-log.js";
import { newPauseId } from "./ids.js";
import type { PendingCall } from "./tool-call.js";
import { describeCall } from "./pending-calls.js";

export type PausePhase = "after_inference" | "after_tools";
type ContinueReason = "continued" | "timeout" | "cancelled" | "disabled";

interface OpenPause {
  id: string;
  resolve(reason: ContinueReason): void;
}

/**
 * Step control: pauses after inference (when tools are pending) and after tools. A pause is
 * registered before its event is emitted (a sink may continue it at once) and ends on continue,
 * timeout (auto-continue), cancellation or when step mode is disabled.
 */
export class Stepper {
  private open?: OpenPause;

  constructor(
    private enabled: boolean,
    private readonly timeoutMs: number,
    private readonly events: EventLog,
    private readonly signal: AbortSignal,
  ) {}

  get currentPauseId(): string | undefined {
    return this.open?.id;
  }

  async pause(phase: PausePhase, pending: PendingCall[]): Promise<ContinueReason | undefined> {
    if (!this.enabled || this.signal.aborted) return undefined;
    const id = newPauseId();
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => this.open?.id === id && this.open.resolve("cancelled");
    const reason = await new Promise<ContinueReason>((resolve) => {
      this.open = { id, resolve };
      timer = setTimeout(() => resolve("timeout"), this.timeoutMs);
      this.signal.addEventListener("abort", onAbort, { once: true });
      this.events.emit({
        type: "debugger.pause",
        pauseId: id,
        phase,
        deadlineMs: Date.now() + this.timeoutMs,
        pendingToolCalls: pending.map(describeCall),
      });
    });
    clearTimeout(timer);
    this.signal.removeEventListener("abort", onAbort);
    this.open = undefined;
    this.events.emit({ type: "debugger.continue", pauseId: id, reason });
    return reason;
  }

  /** True when `pauseId` is this run's open pause (ids are bound to their run). */
  continue(pauseId: string): boolean {
    if (!this.open || this.open.id !== pauseId) return false;
    this.open.resolve("continued");
    return true;
  }

  /** Turns step mode off; an open pause continues with reason "disabled". */
  disable(): void {
    this.enabled = false;
    this.open?.resolve("disabled");
  }
}
