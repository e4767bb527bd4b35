import { HookboxError } from "../errors.js";
import type { Block, Turn } from "../turns/turn.js";
import type { SnapshotPhase } from "../host/types.js";
import { storedBlock } from "../turns/block-json.js";
import type { SqliteStatements } from "./sqlite-statements.js";
import { decodeBase, decodeSegments, type LogSegment } from "./turn-layout.js";
import { turnFromParts, turnTextFromParts } from "./stored-turn.js";
import type { SessionHistory, SnapshotInfo, StoredTurn } from "./types.js";

/* Reading turns in the SQLite store: snapshot layouts, the blocks they name, a session's history. */

interface SnapshotRow {
  run_id: string;
  session_id: string;
  idx: number;
  phase: string;
  blocks: string;
  head: string | null;
  block_bytes: number;
  last_seq: number;
  iterations: number;
  created_ms: number;
}

interface LegacySnapshotRow {
  run_id: string;
  idx: number;
  phase: string;
  turn: string;
  last_seq: number;
  iterations: number;
  created_ms: number;
}

export class SqliteTurns {
  constructor(private readonly s: SqliteStatements) {}

  latestSnapshotInfo(runId: string): SnapshotInfo | undefined {
    const row = this.s.latestSnapshot.get(runId) as SnapshotRow | undefined;
    if (row) return this.info(row, undefined);
    const legacy = this.s.latestLegacySnapshot.get(runId) as LegacySnapshotRow | undefined;
    return legacy && legacyInfo(legacy);
  }

  /** Whole-turn snapshots written before schema 7 first (a resumed old run goes on in the new table). */
  listSnapshotInfos(runId: string): SnapshotInfo[] {
    const legacy = (this.s.listLegacySnapshots.all(runId) as LegacySnapshotRow[]).map(legacyInfo);
    let head: string | undefined;
    const infos = (this.s.listSnapshots.all(runId) as SnapshotRow[]).map((row) => {
      const info = this.info(row, head);
      head = "layout" in info.stored ? info.stored.layout.headJson : head;
      return info;
    });
    return [...legacy, ...infos];
  }

  readTurn(stored: StoredTurn): Turn {
    if ("turnJson" in stored) return JSON.parse(stored.turnJson) as Turn;
    const blocks: Block[] = [];
    this.eachBlockText(stored.layout.segments, (text) => blocks.push(storedBlock(text)));
    return turnFromParts(stored.layout.headJson, blocks);
  }

  readTurnText(stored: StoredTurn): string {
    if ("turnJson" in stored) return stored.turnJson;
    const texts: string[] = [];
    this.eachBlockText(stored.layout.segments, (text) => texts.push(text));
    return turnTextFromParts(stored.layout.headJson, texts);
  }

  sessionHistory(
    sessionId: string,
    beforeRunId: string | undefined,
    base: { base: string | null; initial_turn: string | null } | undefined,
  ) {
    // Usually the latest run has a snapshot; runs cut off before their first one are passed over.
    for (const run of this.s.runsLatestFirst.iterate(sessionId, beforeRunId ?? null) as Iterable<{ id: string }>) {
      const info = this.latestSnapshotInfo(run.id);
      if (info) return { snapshot: { runId: info.runId, index: info.index }, stored: info.stored } satisfies SessionHistory;
    }
    if (base?.base) return { stored: { layout: decodeBase(base.base, sessionId) } } satisfies SessionHistory;
    if (base?.initial_turn) return { stored: { turnJson: base.initial_turn } } satisfies SessionHistory;
    return undefined;
  }

  private info(row: SnapshotRow, previousHead: string | undefined): SnapshotInfo {
    const headJson =
      row.head ?? previousHead ?? (this.s.snapshotHead.get(row.run_id, row.last_seq, row.idx) as { head: string } | undefined)?.head;
    if (headJson === undefined)
      throw new HookboxError("STORE", `snapshot ${row.idx} of run ${row.run_id} has no turn head`, { runId: row.run_id });
    return positionOf(row, { layout: { segments: decodeSegments(row.blocks, row.session_id), headJson, blockBytes: row.block_bytes } });
  }

  private eachBlockText(segments: readonly LogSegment[], each: (text: string) => void): void {
    for (const segment of segments) {
      let expected = segment.from;
      for (const row of this.s.logBlocks.iterate(segment.session, segment.from, segment.to) as Iterable<{ block: string }>) {
        each(row.block);
        expected++;
      }
      if (expected !== segment.to)
        throw new HookboxError("STORE", `the log of session ${segment.session} lacks blocks ${expected}..${segment.to - 1}`, {
          sessionId: segment.session,
        });
    }
  }
}

function legacyInfo(row: LegacySnapshotRow): SnapshotInfo {
  return positionOf(row, { turnJson: row.turn });
}

/** A snapshot row's own columns (either table) as a SnapshotInfo with its stored turn. */
function positionOf(row: Omit<LegacySnapshotRow, "turn">, stored: SnapshotInfo["stored"]): SnapshotInfo {
  return {
    runId: row.run_id,
    index: row.idx,
    phase: row.phase as SnapshotPhase,
    lastSeq: row.last_seq,
    iterations: row.iterations,
    createdMs: row.created_ms,
    stored,
  };
}
