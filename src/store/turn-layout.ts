/*
 * How the store keeps a session's history: every block once, in the session's append-only log, and each
 * snapshot as the turn's layout in the logs (runs of positions) plus the turn's own small fields. A fork's
 * blocks stay in its source session's log: a layout names the log of each run of positions.
 */

/** Positions [from, to) of one session's log, in order. */
export interface LogSegment {
  session: string;
  from: number;
  to: number;
}

/** A turn as stored: where its blocks are, and what else it holds. */
export interface TurnLayout {
  segments: LogSegment[];
  /** The turn without its blocks (`{"id","blocks":[],"metadata","data"}`), as JSON text. */
  headJson: string;
  /** Sum of the blocks' JSON text lengths (with `headJson` and the commas: the turn's JSON length). */
  blockBytes: number;
}

/** One piece of a turn to store: blocks already in a log, or blocks new to the log (their JSON texts). */
export type TurnPiece = { segment: LogSegment } | { append: string[] };

export function blockCount(segments: readonly LogSegment[]): number {
  let count = 0;
  for (const segment of segments) count += segment.to - segment.from;
  return count;
}

/** Adds a run of positions, merged into the last segment when it continues it. */
export function pushSegment(segments: LogSegment[], segment: LogSegment): void {
  if (segment.to <= segment.from) return;
  const last = segments[segments.length - 1];
  if (last && last.session === segment.session && last.to === segment.from) last.to = segment.to;
  else segments.push({ ...segment });
}

/** The first `count` positions of a layout. */
export function leadingSegments(segments: readonly LogSegment[], count: number): LogSegment[] {
  const out: LogSegment[] = [];
  let left = count;
  for (const segment of segments) {
    if (left <= 0) break;
    const take = Math.min(left, segment.to - segment.from);
    out.push({ session: segment.session, from: segment.from, to: segment.from + take });
    left -= take;
  }
  return out;
}

/** Every position of a layout, in order (for the rare turn a middleware rewrote). */
export function* positions(segments: readonly LogSegment[]): Generator<{ session: string; position: number }> {
  for (const segment of segments)
    for (let position = segment.from; position < segment.to; position++) yield { session: segment.session, position };
}

type StoredSegment = [number, number] | [number, number, string];

/**
 * The stored form: `[[from, to], [from, to, "sess_..."]]`, the session named only where it is not the
 * snapshot's own (a fork's history in its source session's log).
 */
export function segmentsValue(segments: readonly LogSegment[], ownSession: string): StoredSegment[] {
  return segments.map((s) => (s.session === ownSession ? [s.from, s.to] : [s.from, s.to, s.session]));
}

export function encodeSegments(segments: readonly LogSegment[], ownSession: string): string {
  return JSON.stringify(segmentsValue(segments, ownSession));
}

export function segmentsFromValue(value: StoredSegment[], ownSession: string): LogSegment[] {
  return value.map(([from, to, session]) => ({ session: session ?? ownSession, from, to }));
}

export function decodeSegments(text: string, ownSession: string): LogSegment[] {
  return segmentsFromValue(JSON.parse(text) as StoredSegment[], ownSession);
}

/** A session's starting turn (`sessions.base`): its layout, the blocks in other sessions' logs for a fork. */
export function encodeBase(layout: TurnLayout, ownSession: string): string {
  return JSON.stringify({ blocks: segmentsValue(layout.segments, ownSession), head: layout.headJson, blockBytes: layout.blockBytes });
}

export function decodeBase(text: string, ownSession: string): TurnLayout {
  const base = JSON.parse(text) as { blocks: StoredSegment[]; head: string; blockBytes: number };
  return { segments: segmentsFromValue(base.blocks, ownSession), headJson: base.head, blockBytes: base.blockBytes };
}

/** The turn's JSON length from its parts: head, blocks and the commas between blocks. */
export function turnBytes(layout: { headJson: string; blockBytes: number }, count: number): number {
  return layout.headJson.length + layout.blockBytes + Math.max(0, count - 1);
}
