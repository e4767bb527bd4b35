import type { HookboxEvent, TextDeltaEvent } from "./types.js";

/*
 * The text a streaming model has written so far in the inference in progress, so a live reader that joins
 * mid-answer starts from the whole answer so far (one `text-delta` with `sofar: true`) instead of from whatever
 * piece comes next (docs/events.md, "Live text"). It holds one answer at most: an inference's start, retry or
 * end, and the run's end or interruption, clear it.
 */

const CLEARS = new Set<HookboxEvent["type"]>([
  "inference-started",
  "inference-retry",
  "inference-finished",
  "run-finished",
  "run-interrupted",
]);

export class AnswerSoFar {
  private pieces: string[] = [];
  private latest: TextDeltaEvent | undefined;

  /** Every stored event, in order: the ones that start or end an answer clear it. */
  observe(event: HookboxEvent): void {
    if (CLEARS.has(event.type)) this.clear();
  }

  /** Every text delta, in order. A delta of another iteration starts a new answer. */
  add(delta: TextDeltaEvent): void {
    if (this.latest && this.latest.iteration !== delta.iteration) this.clear();
    this.pieces.push(delta.delta);
    this.latest = delta;
  }

  /** One delta holding the whole answer so far, for a reader joining now; undefined when nothing is being written. */
  catchUp(): TextDeltaEvent | undefined {
    if (!this.latest) return undefined;
    // Joined once here, so a long answer read by many late readers is not re-joined for each.
    const text = this.pieces.join("");
    this.pieces = [text];
    return { ...this.latest, delta: text, sofar: true };
  }

  private clear(): void {
    this.pieces = [];
    this.latest = undefined;
  }
}
