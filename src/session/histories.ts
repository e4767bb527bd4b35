import type { Turn } from "../turns/turn.js";
import type { SessionHistory, SessionHistoryOptions, Store } from "../store/types.js";
import type { CommittedTurn } from "../store/turn-plan.js";
import { turnFromParts } from "../store/stored-turn.js";

/** A session's history as a run starts from it: the turn, and (when stored as a layout) where its blocks are. */
export interface StartingTurn {
  turn: Turn;
  /** What the run's writer compares its snapshots with (absent: a whole-turn snapshot of schema < 7). */
  committed?: CommittedTurn;
}

export interface HistoryCacheLimits {
  maxSessions: number;
  /** Sum of the cached turns' block bytes. */
  maxBytes: number;
}

export const DEFAULT_HISTORY_CACHE: HistoryCacheLimits = { maxSessions: 1000, maxBytes: 256 * 1024 * 1024 };

interface Entry extends StartingTurn {
  key: string;
  bytes: number;
}

/**
 * The turn each session's next run continues, as this process last committed it, so a run of a long session
 * starts without reading (and parsing) its whole history: the store is asked which snapshot is the session's
 * latest (one indexed read) and the cached turn is used when it is that one. Bounded by sessions and bytes,
 * least recently used out first; a miss reads the history from the store's log.
 */
export class SessionHistories {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(
    private readonly store: Store,
    private readonly limits: HistoryCacheLimits = DEFAULT_HISTORY_CACHE,
  ) {}

  /**
   * The turn a new run of the session continues (before `beforeRunId`, for a run resumed before its first
   * snapshot). `sessionWritesCommitted`: see SessionHistoryOptions (src/store/types.ts).
   */
  async load(sessionId: string, options: SessionHistoryOptions = {}): Promise<StartingTurn | undefined> {
    const history = await this.store.sessionHistory(sessionId, options);
    if (!history) return undefined;
    const key = keyOf(history);
    const cached = this.entries.get(sessionId);
    if (cached?.key === key) {
      this.entries.delete(sessionId);
      this.entries.set(sessionId, cached);
      return cached;
    }
    return this.read(history);
  }

  /** A stored turn as a run starts from it. */
  async read(history: Pick<SessionHistory, "stored">): Promise<StartingTurn> {
    const turn = await this.store.readTurn(history.stored);
    if (!("layout" in history.stored)) return { turn };
    const { segments, headJson, blockBytes } = history.stored.layout;
    return { turn, committed: { blocks: turn.blocks, segments, headJson, blockBytes } };
  }

  /** A run's final snapshot, committed: the session's next run starts from it. */
  remember(sessionId: string, snapshot: { runId: string; index: number }, committed: CommittedTurn): void {
    this.forget(sessionId);
    if (committed.blockBytes > this.limits.maxBytes) return;
    const turn = turnFromParts(committed.headJson, committed.blocks);
    this.entries.set(sessionId, { key: `${snapshot.runId}#${snapshot.index}`, turn, committed, bytes: committed.blockBytes });
    this.bytes += committed.blockBytes;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.limits.maxSessions && this.bytes <= this.limits.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  forget(sessionId: string): void {
    const entry = this.entries.get(sessionId);
    if (!entry) return;
    this.entries.delete(sessionId);
    this.bytes -= entry.bytes;
  }

  get size(): number {
    return this.entries.size;
  }
}

function keyOf(history: SessionHistory): string {
  return history.snapshot ? `${history.snapshot.runId}#${history.snapshot.index}` : "base";
}

/** The writer's own copy of a starting turn's committed view (it appends to it as the run goes). */
export function ownCopy(committed: CommittedTurn | undefined): CommittedTurn | undefined {
  return committed && { ...committed, blocks: committed.blocks.slice(), segments: committed.segments.map((segment) => ({ ...segment })) };
}
