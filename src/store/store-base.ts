import { HookboxError } from "../errors.js";
import type { Block, Turn } from "../turns/turn.js";
import type { HookboxEvent } from "../events/types.js";
import type { SnapshotPhase } from "../host/types.js";
import { eventJson } from "../events/event-json.js";
import { WithPolicyTables } from "./with-policy-tables.js";
import { hookCallWrite } from "./row-bytes.js";
import { planTurn, type CommittedTurn } from "./turn-plan.js";
import type { HookCallRecord } from "./policy-types.js";
import type {
  RunRecord,
  RunWrite,
  RunWriteResult,
  SessionHistory,
  SessionHistoryOptions,
  SnapshotInfo,
  SnapshotRecord,
  StoredSnapshotText,
  StoredTurn,
  TurnLayout,
  WriteOptions,
} from "./types.js";

/**
 * What every store builds from its own primitives (`write`, the snapshot reads, `readTurn`): one-item writes,
 * a snapshot of a whole turn, and snapshots with their turns. A run's writer (src/session/persistence.ts)
 * calls `write` itself, with what it keeps in memory; these serve tests, tools and library callers.
 */
export abstract class StoreBase extends WithPolicyTables {
  abstract write(write: RunWrite): Promise<RunWriteResult>;
  abstract getRun(runId: string): Promise<RunRecord | undefined>;
  abstract latestSnapshotInfo(runId: string): Promise<SnapshotInfo | undefined>;
  abstract listSnapshotInfos(runId: string): Promise<SnapshotInfo[]>;
  abstract readTurn(stored: StoredTurn): Promise<Turn>;
  abstract readTurnText(stored: StoredTurn): Promise<string>;
  abstract sessionHistory(sessionId: string, options?: SessionHistoryOptions): Promise<SessionHistory | undefined>;

  async appendEvent(runId: string, event: HookboxEvent, options: WriteOptions = {}): Promise<void> {
    await this.write({ runId, events: [{ event, json: eventJson(event) }], ...options });
  }

  async recordToolResult(runId: string, callId: string, toolUse: Block, options: WriteOptions = {}): Promise<void> {
    await this.write({ runId, toolResults: [{ callId, blockJson: JSON.stringify(toolUse) }], ...options });
  }

  async recordHookCall(call: Omit<HookCallRecord, "index">, options: WriteOptions = {}): Promise<void> {
    await this.write({ runId: call.runId, hookCalls: [hookCallWrite(call)], ...options });
  }

  async saveSnapshot(runId: string, phase: SnapshotPhase, turn: Turn, options: WriteOptions = {}): Promise<SnapshotRecord> {
    const run = await this.getRun(runId);
    if (!run) throw new HookboxError("STORE", `unknown run ${runId}`, { runId });
    // Compared with the run's latest snapshot, else the history the run continues.
    const latest = await this.latestSnapshotInfo(runId);
    const from = latest?.stored ?? (await this.sessionHistory(run.sessionId, { beforeRunId: runId }))?.stored;
    const previous = from && "layout" in from ? await this.committed(from.layout) : undefined;
    const plan = planTurn(previous, turn);
    const createdMs = Date.now();
    const snapshot = { phase, index: (latest?.index ?? 0) + 1, lastSeq: run.lastSeq, iterations: run.iterations, createdMs };
    await this.write({
      runId,
      snapshot: { ...snapshot, pieces: plan.pieces, headJson: plan.headJson, blockBytes: plan.blockBytes },
      ...options,
    });
    return { runId, ...snapshot, turn };
  }

  async latestSnapshot(runId: string): Promise<SnapshotRecord | undefined> {
    const info = await this.latestSnapshotInfo(runId);
    return info && this.withTurn(info);
  }

  async latestSnapshotText(runId: string): Promise<StoredSnapshotText | undefined> {
    const info = await this.latestSnapshotInfo(runId);
    if (!info) return undefined;
    const { stored, ...rest } = info;
    return { ...rest, turnJson: await this.readTurnText(stored) };
  }

  async listSnapshots(runId: string): Promise<SnapshotRecord[]> {
    return Promise.all((await this.listSnapshotInfos(runId)).map((info) => this.withTurn(info)));
  }

  private async withTurn(info: SnapshotInfo): Promise<SnapshotRecord> {
    const { stored, ...rest } = info;
    return { ...rest, turn: await this.readTurn(stored) };
  }

  private async committed(layout: TurnLayout): Promise<CommittedTurn> {
    const turn = await this.readTurn({ layout });
    return { blocks: turn.blocks, segments: layout.segments, headJson: layout.headJson, blockBytes: layout.blockBytes };
  }
}
