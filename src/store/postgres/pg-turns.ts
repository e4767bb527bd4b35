import { HookboxError } from "../../errors.js";
import type { Block, Turn } from "../../turns/turn.js";
import type { SnapshotPhase } from "../../host/types.js";
import { storedBlock } from "../../turns/block-json.js";
import { blockCount, decodeBase, decodeSegments, type LogSegment } from "../turn-layout.js";
import { turnFromParts, turnTextFromParts } from "../stored-turn.js";
import type { SessionHistory, SnapshotInfo, StoredTurn } from "../types.js";
import type { Queryable } from "./pg-driver.js";

/* Reading turns in the PostgreSQL store: snapshot layouts, the blocks they name (one query per layout), a session's history. */

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

// A snapshot that stores no head has the one of the latest snapshot before it that does.
const SNAPSHOT_COLUMNS = `x.run_id, r.session_id, x.idx, x.phase, x.blocks, x.block_bytes, x.last_seq, x.iterations, x.created_ms,
  coalesce(x.head, (SELECT h.head FROM snapshots h WHERE h.run_id = x.run_id AND h.idx <= x.idx AND h.head IS NOT NULL
    ORDER BY h.idx DESC LIMIT 1)) AS head`;

export class PgTurns {
  constructor(private readonly db: Queryable) {}

  async latestSnapshotInfo(runId: string): Promise<SnapshotInfo | undefined> {
    const row = (
      await this.db.query<SnapshotRow>(
        `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots x JOIN runs r ON r.id = x.run_id WHERE x.run_id = $1 ORDER BY x.idx DESC LIMIT 1`,
        [runId],
      )
    ).rows[0];
    return row && info(row);
  }

  async listSnapshotInfos(runId: string): Promise<SnapshotInfo[]> {
    const rows = await this.db.query<SnapshotRow>(
      `SELECT ${SNAPSHOT_COLUMNS} FROM snapshots x JOIN runs r ON r.id = x.run_id WHERE x.run_id = $1 ORDER BY x.idx`,
      [runId],
    );
    return rows.rows.map(info);
  }

  async readTurn(stored: StoredTurn): Promise<Turn> {
    if ("turnJson" in stored) return JSON.parse(stored.turnJson) as Turn;
    const blocks: Block[] = (await this.blockTexts(stored.layout.segments)).map(storedBlock);
    return turnFromParts(stored.layout.headJson, blocks);
  }

  async readTurnText(stored: StoredTurn): Promise<string> {
    if ("turnJson" in stored) return stored.turnJson;
    return turnTextFromParts(stored.layout.headJson, await this.blockTexts(stored.layout.segments));
  }

  async sessionHistory(sessionId: string, beforeRunId: string | undefined): Promise<SessionHistory | undefined> {
    // The latest run that has a snapshot (runs cut off before their first one are passed over), in one query.
    const row = (
      await this.db.query<SnapshotRow>(
        `SELECT ${SNAPSHOT_COLUMNS} FROM runs r
         JOIN LATERAL (SELECT * FROM snapshots s WHERE s.run_id = r.id ORDER BY s.idx DESC LIMIT 1) x ON true
         WHERE r.session_id = $1 AND ($2::text IS NULL OR (r.started_ms, r.ord) < (SELECT started_ms, ord FROM runs WHERE id = $2))
         ORDER BY r.started_ms DESC, r.ord DESC LIMIT 1`,
        [sessionId, beforeRunId ?? null],
      )
    ).rows[0];
    if (row) {
      const snapshot = info(row);
      return { snapshot: { runId: snapshot.runId, index: snapshot.index }, stored: snapshot.stored };
    }
    const session = (
      await this.db.query<{ base: string | null; initial_turn: string | null }>("SELECT base, initial_turn FROM sessions WHERE id = $1", [
        sessionId,
      ])
    ).rows[0];
    if (session?.base) return { stored: { layout: decodeBase(session.base, sessionId) } };
    if (session?.initial_turn) return { stored: { turnJson: session.initial_turn } };
    return undefined;
  }

  private async blockTexts(segments: readonly LogSegment[]): Promise<string[]> {
    if (segments.length === 0) return [];
    const rows = await this.db.query<{ block: string }>(
      `SELECT l.block FROM unnest($1::text[], $2::int[], $3::int[]) WITH ORDINALITY AS s(session_id, from_pos, to_pos, n)
       JOIN session_log l ON l.session_id = s.session_id AND l.pos >= s.from_pos AND l.pos < s.to_pos
       ORDER BY s.n, l.pos`,
      [segments.map((s) => s.session), segments.map((s) => s.from), segments.map((s) => s.to)],
    );
    if (rows.rows.length !== blockCount(segments)) {
      const first = segments[0].session;
      throw new HookboxError("STORE", `the log of session ${first} lacks blocks of a stored turn`, { sessionId: first });
    }
    return rows.rows.map((row) => row.block);
  }
}

function info(row: SnapshotRow): SnapshotInfo {
  if (row.head === null)
    throw new HookboxError("STORE", `snapshot ${row.idx} of run ${row.run_id} has no turn head`, { runId: row.run_id });
  return {
    runId: row.run_id,
    index: row.idx,
    phase: row.phase as SnapshotPhase,
    lastSeq: row.last_seq,
    iterations: row.iterations,
    createdMs: row.created_ms,
    stored: { layout: { segments: decodeSegments(row.blocks, row.session_id), headJson: row.head, blockBytes: row.block_bytes } },
  };
}
