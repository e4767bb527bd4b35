/**
 * The session records this process created or read, so a request that only needs what a record says (its tenant,
 * its recorded config and defaults) does not read the store and make it commit its queued writes first.
 *
 * Why that keeps the store's promises: a session record never changes after it is created (the store has no
 * update), so a remembered record says what a read would, except whether the session still exists and is the same
 * session. A delete made here forgets it; what another process did is caught where the record is used: starting a
 * run checks, in the transaction that records the run, that the session exists and is the record's tenant's
 * (Store.createRun's `tenant`).
 */
import type { SessionRecord } from "../store/types.js";

/** How many records are kept (each holds its tenant config, scripts included); the oldest remembered is dropped first. */
export const KNOWN_SESSIONS_LIMIT = 1000;

export class KnownSessions {
  private readonly records = new Map<string, SessionRecord>();

  constructor(private readonly limit = KNOWN_SESSIONS_LIMIT) {}

  get(sessionId: string): SessionRecord | undefined {
    return this.records.get(sessionId);
  }

  /**
   * Keeps what a request reads of the record; the starting turn given at creation (`base`, `initialTurn`: a fork's
   * layout or a whole turn, used once by the store when it creates the session) is left out, so a thousand
   * remembered forks of long sessions do not hold their turns.
   */
  remember(record: SessionRecord): void {
    const { base: _base, initialTurn: _initialTurn, ...kept } = record;
    this.records.delete(record.id);
    this.records.set(record.id, kept);
    if (this.records.size > this.limit) this.records.delete(this.records.keys().next().value!);
  }

  forget(sessionId: string): void {
    this.records.delete(sessionId);
  }
}
