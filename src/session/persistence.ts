import type { Block, Turn } from "../turns/turn.js";
import type { HookboxEvent, TextDeltaEvent } from "../events/types.js";
import type { SnapshotPhase, RunPersistence, ChainVerdict, RunResult } from "../host/types.js";
import type { RunWrite, RunWriteResult, Store } from "../store/types.js";
import { HookboxError, isHookboxError } from "../errors.js";
import type { RunFeed } from "./run-feed.js";
import type { JsonObject } from "../turns/json.js";
import { eventJson, eventWithText, type EventWithText } from "../events/event-json.js";
import { hookCallWrite } from "../store/row-bytes.js";
import { committedTurn, planTurn, type CommittedTurn } from "../store/turn-plan.js";
import { atEndOfTurn } from "./end-of-turn.js";

/**
 * The RunPersistence a session hands the loop. Each event is written to the store as the loop emits it and
 * only then published to live readers; each snapshot is awaited before the loop's next phase. It keeps what
 * it wrote in memory (the turn's blocks and where they are, the committed seq, the inferences finished), so a
 * snapshot sends only the blocks new since the last one and nothing is read back from the store.
 * A failed event write fails the next snapshot, so the loop stops instead of running on unrecorded.
 * `freeze()` (drain, interrupt) makes later writes no-ops: the store keeps the run as last committed.
 * What the loop hands over within one turn of the event loop (its events and active hook chain records, up to
 * and including a snapshot or a journal entry, which the loop awaits) is gathered into one store write, handed
 * over with that snapshot or entry, else at the end of the turn: the store checks the run and counts the bytes
 * once for all of it. A shadow chain record and the final event are written alone (refused, they take nothing
 * else with them). Nothing the loop awaits is held back, so a phase is still committed before the next starts.
 */
export interface StoredRunPersistenceOptions {
  store: Store;
  runId: string;
  sessionId: string;
  tenant: string;
  feed: RunFeed;
  committedToolResults?: Map<string, Block>;
  /** The tenant's store quota: a write over it fails the run with STORE_QUOTA (the final event is always written). */
  maxTenantBytes?: number;
  /** Where the run starts: the turn it continues as stored (none: its first snapshot writes every block). */
  from?: {
    turn?: CommittedTurn;
    /** The run's own latest snapshot (a resumed run), 0 for a new run. */
    snapshotIndex: number;
    /** Event seq and inferences already committed, and the inference id (a resumed run's). */
    lastSeq: number;
    iterations: number;
    inferenceId?: string;
    /** The run's epoch under this owner: every write carries it, and is refused once another owner has the run. */
    epoch?: number;
  };
  /** Told each final snapshot as committed: the session's next run starts from it (src/session/histories.ts). */
  onFinalTurn?(snapshot: { runId: string; index: number }, turn: CommittedTurn): void;
  /** The run's ownership check before each tool execution (RunPersistence.fence; a cluster store's lease). */
  fence?: () => Promise<void>;
  /**
   * Told when a write finds the run no longer this process's to write (LEASE_LOST) or the database out of reach
   * (STORE_UNAVAILABLE): the run stops here without another write, and its lease lapses so a node takes it over.
   */
  onLost?(error: HookboxError): void;
}

type WritePart = Omit<RunWrite, "runId" | "sessionId" | "tenant" | "epoch" | "maxTenantBytes">;

interface Gathering {
  part: WritePart;
  regardlessOfQuota: boolean;
  written: Promise<RunWriteResult>;
  settle: { resolve(result: RunWriteResult): void; reject(error: unknown): void };
  /** The events this write publishes once committed, in order (one reaction for all of them, not one each). */
  published: EventWithText[];
  /** A refusal fails the run (it carries events or active hook chain records): the next snapshot throws it. */
  failsRun: boolean;
}

export class StoredRunPersistence implements RunPersistence {
  private failure: unknown;
  private frozen = false;
  readonly journal: NonNullable<RunPersistence["journal"]>;
  readonly fence: RunPersistence["fence"];
  private readonly options: StoredRunPersistenceOptions;
  private readonly owner: Pick<RunWrite, "runId" | "sessionId" | "tenant" | "epoch">;
  private committed: CommittedTurn | undefined;
  private snapshotIndex: number;
  /** The run's snapshots store the turn's head only when it changed. */
  private storedHead: string | undefined;
  private issuedSeq: number;
  private committedSeq: number;
  private iterations: number;
  private inferenceId: string;
  private ended = false;
  /** A final event was handed over (its write may still be in flight). */
  ending = false;
  private writes: Promise<unknown> = Promise.resolve();
  /** The parts of the run's next write, not yet handed to the store, and the promise of that write. */
  private gathering: Gathering | undefined;
  /** What is gathered when this turn of the event loop ends is handed over then (one callback per writer). */
  private handOverQueued = false;
  private readonly handOverAtEndOfTurn = (): void => {
    this.handOverQueued = false;
    this.handOver();
  };

  constructor(options: StoredRunPersistenceOptions) {
    this.options = options;
    const { runId, sessionId, tenant } = options;
    const epoch = options.from?.epoch;
    this.owner = { runId, sessionId, tenant, ...(epoch ? { epoch } : {}) };
    this.inferenceId = options.from?.inferenceId ?? "";
    this.committed = options.from?.turn;
    this.snapshotIndex = options.from?.snapshotIndex ?? 0;
    this.issuedSeq = this.committedSeq = options.from?.lastSeq ?? 0;
    this.iterations = options.from?.iterations ?? 0;
    if (options.fence) this.fence = options.fence;
    const results = options.committedToolResults ?? new Map<string, Block>();
    this.journal = {
      lookup: (callId) => results.get(callId),
      record: async (callId, toolUse) => {
        if (this.frozen) return;
        // Awaited by the loop before its next call: handed over at once.
        await this.write({ toolResults: [{ callId, blockJson: JSON.stringify(toolUse) }] }, { now: true });
        results.set(callId, toolUse);
      },
    };
  }

  // Arrow properties: the loop may call these detached from the object.
  readonly onEvent = (event: HookboxEvent, json: string = eventJson(event)): void => {
    if (this.frozen || this.failure) return;
    this.issuedSeq = event.seq;
    this.inferenceId ||= event.inferenceId;
    if (event.type === "inference-finished") this.iterations += 1;
    // One object per event from here on: the store writes it, the feed and every stream reader pass it on.
    const entry = eventWithText(event, json);
    if (event.type !== "run-finished") {
      const gathering = this.joining({});
      (gathering.part.events ??= []).push(entry);
      gathering.published.push(entry);
      gathering.failsRun = true;
      return;
    }
    this.ending = true;
    // The final event is written alone: refused over the quota, endOverQuota replaces it and nothing else.
    this.write({ events: [entry] }, { alone: true }).then(
      () => this.committedEvent(entry),
      (error: unknown) => {
        if (isHookboxError(error) && error.code === "STORE_QUOTA") return this.endOverQuota(event, error);
        this.failure ??= error;
      },
    );
  };

  /** Never stored: published once the events emitted before it are committed and published, so readers keep the order. */
  readonly onLiveEvent = (event: TextDeltaEvent): void => {
    if (this.frozen || this.failure) return;
    void this.writes.then(() => this.options.feed.publishDelta(event));
  };

  readonly onHookCall = (verdict: ChainVerdict): void => {
    if (this.frozen || this.failure) return;
    const { payload, ...rest } = verdict;
    const record = hookCallWrite({ ...rest, ...(verdict.shadow ? {} : { payload: payload as unknown as JsonObject }) });
    // A shadow record is written alone: refused (over the quota), it takes nothing of the run with it, and it is
    // lost, never the run's failure. An active one (what replay and provenance read) fails the next snapshot,
    // so the run ends with the store's error.
    const gathering = this.joining({ alone: verdict.shadow });
    (gathering.part.hookCalls ??= []).push(record);
    if (verdict.shadow) this.handOver();
    else gathering.failsRun = true;
  };

  readonly onSnapshot = async (phase: SnapshotPhase, turn: Turn): Promise<void> => {
    if (this.frozen) return;
    if (this.failure) throw this.persistError(this.failure);
    // Planned now: the turn is read before the loop goes on.
    const plan = planTurn(this.committed, turn);
    const index = this.snapshotIndex + 1;
    let segments;
    try {
      const written = await this.write(
        {
          snapshot: {
            phase,
            index,
            pieces: plan.pieces,
            ...(plan.headJson !== this.storedHead ? { headJson: plan.headJson } : {}),
            blockBytes: plan.blockBytes,
            lastSeq: this.issuedSeq,
            iterations: this.iterations,
            createdMs: Date.now(),
          },
        },
        { regardlessOfQuota: phase === "final" },
      );
      segments = written.snapshot!.segments;
    } catch (error) {
      throw this.persistError(this.failure ?? error);
    }
    this.snapshotIndex = index;
    this.storedHead = plan.headJson;
    this.committed = committedTurn(this.committed, turn, plan, segments);
    if (this.failure) throw this.persistError(this.failure);
    if (phase === "final") this.options.onFinalTurn?.({ runId: this.options.runId, index }, this.committed);
  };

  /** Resolves once every write handed over so far is committed or refused (and its event published). */
  readonly settled = async (): Promise<void> => {
    await this.writes;
  };

  /**
   * After the loop returned: a run that ended without committing its final event gets one (a host fault, a
   * store failure), after the writes in flight settled, so it follows the last committed event.
   */
  async closeRun(result: (Pick<RunResult, "status" | "reason" | "errorCode"> & { iterations?: number }) | undefined): Promise<void> {
    await this.writes.catch(() => undefined);
    if (this.ended || this.frozen) return;
    const event: HookboxEvent = {
      type: "run-finished",
      seq: this.committedSeq + 1,
      timestampMs: Date.now(),
      sessionId: this.options.sessionId,
      inferenceId: this.inferenceId,
      status: result?.status ?? "failed",
      iterations: result?.iterations ?? this.iterations,
      ...(result?.reason ? { reason: result.reason } : {}),
      ...(result?.errorCode ? { errorCode: result.errorCode } : {}),
    };
    const entry = eventWithText(event);
    await this.write({ events: [entry] }, { regardlessOfQuota: true }).then(
      () => this.committedEvent(entry),
      (error: unknown) => {
        // Readers still learn how the run ended; a full store takes the same event once it has room.
        this.options.feed.publish(entry);
        if (isHookboxError(error) && error.code === "STORE_FULL") this.storeWhenRoom(entry);
      },
    );
  }

  /**
   * Writes a run's final event once the full store has room again, retrying with a growing pause (at most
   * 30 s), so the stored run ends as its readers saw it end. Stops on any other failure; a process that exits
   * first leaves the run `running`, and the next store open marks it interrupted.
   */
  private storeWhenRoom(entry: EventWithText, waitMs = 1000): void {
    setTimeout(() => {
      this.options.store.write({ ...this.owner, events: [entry] }).catch((error: unknown) => {
        if (isHookboxError(error) && error.code === "STORE_FULL") this.storeWhenRoom(entry, Math.min(waitMs * 2, 30_000));
      });
    }, waitMs).unref();
  }

  freeze(): void {
    // What was handed over before goes to the store now, as it would have without gathering.
    this.handOver();
    this.frozen = true;
  }

  private committedEvent(entry: EventWithText): void {
    this.committedSeq = entry.seq;
    if (entry.type === "run-finished") this.ended = true;
    this.options.feed.publish(entry);
  }

  /**
   * Writes of the run go out in order; the tenant's quota applies unless `regardlessOfQuota`. The part joins the
   * write being gathered (unless it is to be `alone`, or its quota differs); a snapshot ends the write.
   */
  private write(part: WritePart, how: { regardlessOfQuota?: boolean; alone?: boolean; now?: boolean } = {}): Promise<RunWriteResult> {
    const gathering = this.joining(how);
    const into = gathering.part;
    if (part.events) (into.events ??= []).push(...part.events);
    if (part.toolResults) (into.toolResults ??= []).push(...part.toolResults);
    if (part.hookCalls) (into.hookCalls ??= []).push(...part.hookCalls);
    if (part.snapshot) into.snapshot = part.snapshot;
    if (part.snapshot || how.alone || how.now) this.handOver();
    return gathering.written;
  }

  /** The write a part joins: the one being gathered, unless the part is to be `alone` or its quota differs. */
  private joining(how: { regardlessOfQuota?: boolean; alone?: boolean }): Gathering {
    const regardlessOfQuota = how.regardlessOfQuota ?? false;
    if (this.gathering && (how.alone || this.gathering.regardlessOfQuota !== regardlessOfQuota)) this.handOver();
    return (this.gathering ??= this.gather(regardlessOfQuota));
  }

  /** A new write to gather parts into, handed to the store at the end of this turn of the event loop at the latest. */
  private gather(regardlessOfQuota: boolean): Gathering {
    let settle!: Gathering["settle"];
    const written = new Promise<RunWriteResult>((resolve, reject) => (settle = { resolve, reject }));
    const gathering: Gathering = { part: {}, regardlessOfQuota, written, settle, published: [], failsRun: false };
    if (!this.handOverQueued) {
      this.handOverQueued = true;
      atEndOfTurn(this.handOverAtEndOfTurn);
    }
    // Before the write's other reactions: its events are published before `settled()` or an awaited snapshot returns.
    written.then(
      () => {
        for (const entry of gathering.published) this.committedEvent(entry);
      },
      (error: unknown) => {
        if (gathering.failsRun) this.failure ??= error;
      },
    );
    // Settled after the write's events were published (and the caller's own handlers ran).
    this.writes = written.then(
      () => undefined,
      (error: unknown) => {
        if (isHookboxError(error) && (error.code === "LEASE_LOST" || error.code === "STORE_UNAVAILABLE") && !this.frozen) {
          this.frozen = true;
          this.options.onLost?.(error);
        }
      },
    );
    return gathering;
  }

  /** Hands the write being gathered to the store. */
  private handOver(): void {
    const gathering = this.gathering;
    if (!gathering) return;
    this.gathering = undefined;
    const quota = this.options.maxTenantBytes;
    this.options.store
      .write({
        ...this.owner,
        ...(quota !== undefined && !gathering.regardlessOfQuota ? { maxTenantBytes: quota } : {}),
        ...gathering.part,
      })
      .then(gathering.settle.resolve, gathering.settle.reject);
  }

  /**
   * A final event refused by the quota is replaced by a small one (no text) written regardless: the run reads
   * as failed with STORE_QUOTA instead of never ending. That is the only write past the quota, a few hundred bytes.
   */
  private endOverQuota(event: HookboxEvent & { type: "run-finished" }, error: HookboxError): Promise<void> {
    const { text: _text, ...rest } = event;
    const ending = eventWithText({ ...rest, status: "failed", errorCode: "STORE_QUOTA", reason: error.message });
    return this.write({ events: [ending] }, { regardlessOfQuota: true }).then(
      () => this.committedEvent(ending),
      (failed: unknown) => {
        this.failure ??= failed;
      },
    );
  }

  private persistError(error: unknown): HookboxError {
    if (error instanceof HookboxError) return error;
    return new HookboxError("STORE", `run ${this.options.runId} could not be persisted: ${(error as Error)?.message ?? String(error)}`, {
      runId: this.options.runId,
    });
  }
}
