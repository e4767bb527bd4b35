/*
 * Group commit: the writes that arrive within one turn of the event loop, from every run, are applied in
 * one transaction, in arrival order, at the end of that turn (setImmediate). Each write still succeeds or
 * fails on its own (the store applies each in a savepoint), and its promise settles once the transaction
 * is committed, so a caller that awaits a write knows it is durable. A transaction takes writes up to
 * MAX_BATCH_BYTES of text (at least one write), the rest go in the next turn: a burst of big results never
 * holds the event loop for all of them at once. Reads flush what is queued first, so a read always sees
 * the writes issued before it.
 */

/** Text one transaction takes before the writes after it wait for the next turn of the event loop. */
export const MAX_BATCH_BYTES = 1024 * 1024;

export type Applied<Result> = { ok: true; value: Result } | { ok: false; error: unknown };

interface Queued<Write, Result> {
  write: Write;
  bytes: number;
  resolve(value: Result): void;
  reject(error: unknown): void;
}

export class GroupCommit<Write, Result> {
  private queue: Queued<Write, Result>[] = [];
  private scheduled = false;

  /** `apply` runs one transaction for a batch and says how each write of it ended (or throws: all failed). */
  constructor(private readonly apply: (writes: Write[]) => Applied<Result>[]) {}

  /** Queues a write of about `bytes` of text for the next transaction. */
  submit(write: Write, bytes = 0): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ write, bytes, resolve, reject });
      this.schedule();
    });
  }

  get pending(): boolean {
    return this.queue.length > 0;
  }

  /** Applies everything queued now (a read calls this first). */
  flush(): void {
    while (this.queue.length > 0) this.commitNext();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.commitNext();
      if (this.queue.length > 0) this.schedule();
    });
  }

  /** One transaction: the oldest writes, up to MAX_BATCH_BYTES. */
  private commitNext(): void {
    let count = 0;
    let bytes = 0;
    while (count < this.queue.length && (count === 0 || bytes + this.queue[count].bytes <= MAX_BATCH_BYTES))
      bytes += this.queue[count++].bytes;
    const batch = this.queue.splice(0, count);
    if (batch.length === 0) return;
    let results: Applied<Result>[];
    try {
      results = this.apply(batch.map((queued) => queued.write));
    } catch (error) {
      for (const queued of batch) queued.reject(error);
      return;
    }
    batch.forEach((queued, index) => {
      const result = results[index];
      if (result.ok) queued.resolve(result.value);
      else queued.reject(result.error);
    });
  }
}
