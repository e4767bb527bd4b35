import { overQuota, quotaError } from "./quota.js";
import { NO_USAGE, usageColumns, type UsageDelta } from "./usage.js";
import type { SqliteStatements } from "./sqlite-statements.js";
import type { RunNumbers } from "./run-numbers.js";
import type { CommittedPositions, KnownRun, LearntPositions } from "./committed-positions.js";

/**
 * What the writes of one group-commit transaction add up to. Each write charges its bytes (known from the
 * texts it writes) as its last step: a tenant's stored total is read once per transaction, checked against
 * each write's quota in memory, and written back once with one update, together with the all-time usage
 * totals (the same row). The transaction holds SQLite's write lock, so no other process changes them in between.
 */
export class SqliteBatch implements LearntPositions {
  private readonly before = new Map<string, number>();
  private readonly added = new Map<string, number>();
  private readonly usage = new Map<string, UsageDelta>();
  readonly runs = new Map<string, KnownRun>();
  readonly endedRuns = new Set<string>();
  readonly logEnds = new Map<string, number>();
  untracked = false;

  /**
   * `numbers`: the runs' numbers this process knows (run-numbers.ts); `committed`: where this process's committed
   * writes left runs, logs and tenants (committed-positions.ts), checked against other connections' commits.
   * Both are kept across transactions.
   */
  constructor(
    private readonly statements: SqliteStatements,
    readonly numbers: RunNumbers,
    private readonly committed: CommittedPositions,
  ) {}

  /** Adds `bytes` to the tenant, or throws STORE_QUOTA (the write's savepoint is then rolled back). */
  charge(tenant: string, bytes: number, maxTenantBytes?: number): void {
    const added = this.added.get(tenant) ?? 0;
    if (maxTenantBytes !== undefined) {
      const stored = this.storedBefore(tenant) + added;
      if (overQuota(stored, bytes, maxTenantBytes)) throw quotaError(tenant, stored, bytes, maxTenantBytes);
    }
    this.added.set(tenant, added + bytes);
  }

  /** Usage a write's events recorded (counted once the write is kept). */
  addUsage(tenant: string, delta: UsageDelta): void {
    const sum = this.usage.get(tenant);
    if (!sum) this.usage.set(tenant, { ...delta });
    else for (const key of Object.keys(sum) as (keyof UsageDelta)[]) sum[key] += delta[key];
  }

  /**
   * What an earlier write of this transaction, or else this process's committed writes (committed-positions.ts),
   * established about a run (its seq advanced, its epoch checked): a write of the run does not read its row again.
   * The transaction holds the write lock, so only its own writes change the row meanwhile (a resume's new epoch is
   * learnt from its own event write).
   */
  knownRun(runId: string): KnownRun | undefined {
    return this.runs.get(runId) ?? (this.untracked ? undefined : this.committed.run(runId));
  }

  learnRun(runId: string, known: KnownRun): void {
    const own = this.runs.get(runId);
    // A committed entry is copied, not changed: this transaction may still fail.
    if (own) Object.assign(own, known);
    else this.runs.set(runId, { ...this.knownRun(runId), ...known });
  }

  /** The run ended: nothing more is kept of it once the transaction commits. */
  endRun(runId: string): void {
    this.numbers.forget(runId);
    this.endedRuns.add(runId);
  }

  /** The next free position of a session's log, when this transaction or a committed one of this process knows it. */
  logEnd(sessionId: string): number | undefined {
    return this.logEnds.get(sessionId) ?? (this.untracked ? undefined : this.committed.logEnd(sessionId));
  }

  setLogEnd(sessionId: string, next: number): void {
    this.logEnds.set(sessionId, next);
  }

  /**
   * A write rolled back alone (what it taught may no longer hold, and what the writes kept before it changed is no
   * longer in this batch's view), or a write comes that does not report its changes (a deletion, a resume, a policy
   * table's): neither this batch's view nor the committed state is consulted again in this transaction.
   */
  forgetLearnt(): void {
    this.runs.clear();
    this.endedRuns.clear();
    this.logEnds.clear();
    this.untracked = true;
  }

  forEachTenantBytes(each: (tenant: string, bytes: number | undefined) => void): void {
    this.added.forEach((added, tenant) => {
      const before = this.before.get(tenant) ?? this.committed.storedBytes(tenant);
      each(tenant, before === undefined ? undefined : before + added);
    });
  }

  /** Writes the totals back (one row per tenant, bytes and usage together), at the end of the transaction. */
  finish(): void {
    for (const tenant of new Set([...this.added.keys(), ...this.usage.keys()])) {
      this.statements.addTenantTotals.run(tenant, this.added.get(tenant) ?? 0, ...usageColumns(this.usage.get(tenant) ?? NO_USAGE));
    }
  }

  private storedBefore(tenant: string): number {
    let stored = this.before.get(tenant);
    if (stored === undefined) {
      stored =
        (this.untracked ? undefined : this.committed.storedBytes(tenant)) ??
        (this.statements.tenantBytes.get(tenant) as { bytes: number } | undefined)?.bytes ??
        0;
      this.before.set(tenant, stored);
    }
    return stored;
  }
}
