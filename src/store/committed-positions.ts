/*
 * Where this process's committed writes left the rows its next writes start from: each run's seq, epoch and
 * number, each session log's next position, each tenant's stored bytes. A run write would otherwise read them
 * back at the start of each transaction it is in (a run's phases land in several), though this process wrote them.
 *
 * What is kept is true only while no other connection committed: `PRAGMA data_version` (read at the start of
 * each transaction, under the write lock) moves when one did, and everything is forgotten then. Writes of this
 * connection that change these rows in ways a transaction does not report (a session's deletion, a resume, the
 * policy tables) make the transaction forget everything too (`SqliteBatch.untracked`). A transaction that fails
 * teaches nothing. Entries go when their run ends, and all at once past a bound; a missing one is read again.
 */

/**
 * What a writer knows of a run from its own writes or a read of its row: its committed seq, its number (what keys its records),
 * and the epoch a write was checked against.
 */
export interface KnownRun {
  lastSeq: number;
  num: number;
  epoch?: number;
}

/** Entries kept per map before it starts over. */
const MAX_ENTRIES = 10_000;

/** What one committed transaction learnt: the batch's own view (sqlite-batch.ts). */
export interface LearntPositions {
  readonly runs: ReadonlyMap<string, KnownRun>;
  readonly endedRuns: ReadonlySet<string>;
  readonly logEnds: ReadonlyMap<string, number>;
  /** Each tenant the transaction charged, with its stored bytes after it (undefined: the batch did not know them before). */
  forEachTenantBytes(each: (tenant: string, bytes: number | undefined) => void): void;
  /** A write of the transaction changed these rows without reporting how. */
  readonly untracked: boolean;
}

export class CommittedPositions {
  private readonly runs = new Map<string, KnownRun>();
  private readonly logEnds = new Map<string, number>();
  private readonly tenantBytes = new Map<string, number>();
  private dataVersion: number | undefined;

  /** At a transaction's start: forgets everything when another connection committed since the last one. */
  check(dataVersion: number): void {
    if (dataVersion !== this.dataVersion) this.forget();
    this.dataVersion = dataVersion;
  }

  run(runId: string): KnownRun | undefined {
    return this.runs.get(runId);
  }

  logEnd(sessionId: string): number | undefined {
    return this.logEnds.get(sessionId);
  }

  storedBytes(tenant: string): number | undefined {
    return this.tenantBytes.get(tenant);
  }

  /** A transaction committed: what it learnt is now the committed state (its objects are taken over, not copied). */
  committed(learnt: LearntPositions): void {
    if (learnt.untracked) return this.forget();
    // forEach, not for-of: no entry array per item, on a path every transaction takes.
    learnt.runs.forEach((known, runId) => bounded(this.runs, runId, known));
    learnt.endedRuns.forEach((runId) => this.runs.delete(runId));
    learnt.logEnds.forEach((next, sessionId) => bounded(this.logEnds, sessionId, next));
    learnt.forEachTenantBytes((tenant, bytes) => {
      if (bytes === undefined) this.tenantBytes.delete(tenant);
      else bounded(this.tenantBytes, tenant, bytes);
    });
  }

  /** A transaction failed, or what is kept can no longer be trusted. */
  forget(): void {
    this.runs.clear();
    this.logEnds.clear();
    this.tenantBytes.clear();
    this.dataVersion = undefined;
  }
}

function bounded<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= MAX_ENTRIES && !map.has(key)) map.clear();
  map.set(key, value);
}
