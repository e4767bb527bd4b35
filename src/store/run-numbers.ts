/*
 * Each run's number in the SQLite store (schema 11, `runs.num`: what keys its records), by run id, as this process
 * learnt them: at the run's creation, or from a read of its row. A run keeps its number, and a run id is never given
 * to another run, so an entry is true for as long as its run exists; a write uses one only for a run its seq update
 * has just found by id, in the same transaction. Entries go when their run ends here, and all at once past a bound
 * (runs that end in another process); a missing one is read again.
 */

/** Entries kept before the map starts over. */
const MAX_ENTRIES = 10_000;

export class RunNumbers {
  private readonly numbers = new Map<string, number>();

  get(runId: string): number | undefined {
    return this.numbers.get(runId);
  }

  set(runId: string, num: number): void {
    if (this.numbers.size >= MAX_ENTRIES) this.numbers.clear();
    this.numbers.set(runId, num);
  }

  forget(runId: string): void {
    this.numbers.delete(runId);
  }
}
