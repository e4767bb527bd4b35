import type { Turn } from "./turn.js";
import { bagJson, membersJson } from "./known-json.js";

/**
 * A turn's own fields (its "head") as JSON: the turn with an empty blocks array in first place, so the whole turn's
 * text is the head with the blocks' texts spliced in (src/store/stored-turn.ts). The texts kept for shared values in
 * its metadata and data (known-json.ts) are spliced in rather than serialized again. Its length is what the turn's
 * own fields add to the turn's JSON, wherever `blocks` stands.
 */
export function headJson(turn: Turn): string {
  const members = membersJson(turn, (key, value) => {
    if (key === "blocks") return undefined;
    const bag = (key === "metadata" || key === "data") && value !== null && typeof value === "object" && !Array.isArray(value);
    return bag ? bagJson(value as Record<string, unknown>) : (JSON.stringify(value) as string | undefined);
  });
  return members ? `{"blocks":[],${members}}` : '{"blocks":[]}';
}
