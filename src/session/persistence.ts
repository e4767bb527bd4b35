import type { Block, Turn } from "../turns/turn.js";
import type { HookboxEvent } from "../events/types.js";
import type { SnapshotPhase, RunPersistence, ChainVerdict } from "../host/types.js";
import type { Store, WriteOptions } from "../store/types.js";
import { HookboxError, isHookboxError } from "../errors.js";
import type { RunFeed } from "./run-feed.js";
import type { JsonObject } from "../turns/json.js";

/**
 * The RunPersistence a session hands the loop: each event is written to the store as the loop emits it
 * and only then published to live readers; each snapshot is awaited before the loop's next phase.
 * A failed event write fails the next snapshot, so the loop stops instead of running on unrecorded.
 * `freeze()` (drain, interrupt) makes later writes no-ops: the store keeps the run as last committed.
 */
export interface StoredRunPersistenceOptions {
  store: Store;
  runId: string;
  feed: RunFeed;
  committedToolResults?: Map<string, Block>;
  /** The tenant's store quota: a write over it fails the run with STORE_QUOTA (the final event is always written). */
  maxTenantBytes?: number;
}

export class StoredRunPersistence implements RunPersistence {
  private failure: unknown;
  private frozen = false;
  readonly journal: NonNullable<RunPersistence["journal"]>;
  private readonly store: Store;
  private readonly runId: string;
  private readonly feed: RunFeed;
  private readonly quota: WriteOptions;

  constructor(options: StoredRunPersistenceOptions) {
    ({ store: this.store, runId: this.runId, feed: this.feed } = options);
    this.quota = options.maxTenantBytes !== undefined ? { maxTenantBytes: options.maxTenantBytes } : {};
    const results = options.committedToolResults ?? new Map<string, Block>();
    this.journal = {
      lookup: (callId) => results.get(callId),
      record: async (callId, toolUse) => {
        if (this.frozen) return;
        await this.store.recordToolResult(this.runId, callId, toolUse, this.quota);
        results.set(callId, toolUse);
      },
    };
  }

  // Arrow properties: the loop may call these detached from the object.
  readonly onEvent = (event: HookboxEvent): void => {
    if (this.frozen || this.failure) return;
    // SQLite commits inside this call; a networked store commits in call order before the next snapshot.
    this.store.appendEvent(this.runId, event, this.quota).then(
      () => this.feed.publish(event),
      (error: unknown) => {
        if (event.type === "run-finished" && isHookboxError(error) && error.code === "STORE_QUOTA") return this.endOverQuota(event, error);
        this.failure ??= error;
      },
    );
  };

  readonly onHookCall = (verdict: ChainVerdict): void => {
    if (this.frozen || this.failure) return;
    const { payload, ...rest } = verdict;
    const written = this.store.recordHookCall(
      {
        runId: this.runId,
        ...rest,
        ...(verdict.shadow ? {} : { payload: payload as unknown as JsonObject }),
      },
      this.quota,
    );
    // A shadow record that cannot be written (over the quota too) is lost, never the run's failure; an active
    // one (what replay and provenance read) fails the next snapshot, so the run ends with the store's error.
    written.catch((error: unknown) => {
      if (!verdict.shadow) this.failure ??= error;
    });
  };

  readonly onSnapshot = async (phase: SnapshotPhase, turn: Turn): Promise<void> => {
    if (this.frozen) return;
    if (this.failure) throw this.persistError(this.failure);
    try {
      await this.store.saveSnapshot(this.runId, phase, turn, phase === "final" ? {} : this.quota);
    } catch (error) {
      throw this.persistError(error);
    }
    if (this.failure) throw this.persistError(this.failure);
  };

  /**
   * A final event refused by the quota is replaced by a small one (no text) written regardless: the run reads
   * as failed with STORE_QUOTA instead of never ending. That is the only write past the quota, a few hundred bytes.
   */
  private endOverQuota(event: HookboxEvent & { type: "run-finished" }, error: HookboxError): Promise<void> {
    const { text: _text, ...rest } = event;
    const ending: HookboxEvent = { ...rest, status: "failed", errorCode: "STORE_QUOTA", reason: error.message };
    return this.store.appendEvent(this.runId, ending).then(
      () => this.feed.publish(ending),
      (failed: unknown) => {
        this.failure ??= failed;
      },
    );
  }

  freeze(): void {
    this.frozen = true;
  }

  private persistError(error: unknown): HookboxError {
    if (error instanceof HookboxError) return error;
    return new HookboxError("STORE", `run ${this.runId} could not be persisted: ${(error as Error)?.message ?? String(error)}`, {
      runId: this.runId,
    });
  }
}
