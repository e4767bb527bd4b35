/**
 * The supervisor's clock for the exec message at the head of a worker's line: when its reply is overdue,
 * `onOverdue` runs. One timer is kept armed (unref'd: a busy worker's pipe keeps the host alive, an idle
 * one must not) and re-armed only when it fires early, instead of a clearTimeout + setTimeout per message
 * on the hot path.
 */
export class ReplyDeadline {
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires, and when the head is overdue (Infinity: nothing watched). */
  private timerAt = Infinity;
  private deadline = Infinity;

  constructor(private readonly onOverdue: () => void) {}

  /** Watches a reply due by `at` (performance.now() time), in place of whatever was watched. */
  watch(at: number): void {
    this.deadline = at;
    if (this.timerAt > at) this.arm(at);
  }

  /** Nothing is due any more (the timer stays armed, and does nothing when it fires). */
  clear(): void {
    this.deadline = Infinity;
  }

  dispose(): void {
    this.deadline = Infinity;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.fired(), Math.max(0, at - performance.now()));
    this.timer.unref();
  }

  private fired(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.deadline === Infinity) return;
    if (performance.now() < this.deadline) return this.arm(this.deadline);
    this.deadline = Infinity;
    this.onOverdue();
  }
}
