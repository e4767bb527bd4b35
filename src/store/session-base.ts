import { headJson } from "../turns/head-json.js";
import type { TurnLayout } from "./turn-layout.js";
import type { SessionRecord } from "./types.js";

/**
 * Where a new session's history starts: a fork's layout in its source's log (nothing copied), or a whole
 * starting turn given at creation, whose blocks become the first entries of the session's own log.
 */
export function newSessionLog(session: SessionRecord): { layout?: TurnLayout; blockTexts: string[] } {
  if (session.base) return { layout: session.base, blockTexts: [] };
  if (!session.initialTurn) return { blockTexts: [] };
  const blockTexts = session.initialTurn.blocks.map((block) => JSON.stringify(block));
  return {
    layout: {
      segments: blockTexts.length ? [{ session: session.id, from: 0, to: blockTexts.length }] : [],
      headJson: headJson(session.initialTurn),
      blockBytes: blockTexts.reduce((sum, text) => sum + text.length, 0),
    },
    blockTexts,
  };
}
