import { z } from "zod";
import { JsonObjectSchema, type JsonObject } from "./json.js";
import { BLOCK_KINDS, type BlockKind } from "./keys.gen.js";

/**
 * The conversation a loop works on. Blocks are append-mostly; `metadata` holds per-turn facts
 * (ids, usage, model), `data` holds configuration the loop writes (tool config and definitions).
 * Both bags are keyed by versioned key ids (`hookbox.session_id@v1`) and read through typed keys.
 */
export interface Block {
  id: string;
  kind: BlockKind;
  role?: string;
  payload: JsonObject;
  metadata: JsonObject;
}

export interface Turn {
  id: string;
  blocks: Block[];
  metadata: JsonObject;
  data: JsonObject;
}

const knownKinds = new Set<string>(BLOCK_KINDS);

/** Unknown kinds read as `other`, so a newer producer never breaks an older reader. */
export const BlockKindSchema = z
  .string()
  .min(1)
  .transform((kind): BlockKind => (knownKinds.has(kind) ? (kind as BlockKind) : "other"));

export const BlockSchema = z.object({
  id: z.string().min(1),
  kind: BlockKindSchema,
  role: z.string().optional(),
  payload: JsonObjectSchema.default({}),
  metadata: JsonObjectSchema.default({}),
});

export const TurnSchema = z.object({
  id: z.string().min(1),
  blocks: z.array(BlockSchema),
  metadata: JsonObjectSchema.default({}),
  data: JsonObjectSchema.default({}),
});

export function parseTurn(value: unknown): Turn {
  return TurnSchema.parse(value) as Turn;
}
