/*
 * Block kinds inside the sandbox. A block's payload is typed by its kind (types/turns.d.ts `BlockPayloads`);
 * isBlockKind narrows a block to its kind so a script reads `block.payload.text` with its type.
 */
import { BLOCK_PAYLOAD_TYPES } from "./constants.gen.js";
import { JSONStringify, ObjectHasOwn, TypeErrorCtor } from "./primordials.js";

/** True when `block` is a block of `kind` (only the kind is checked: a middleware may have written the payload). */
export function isBlockKind(block: unknown, kind: string): boolean {
  if (typeof kind !== "string" || !ObjectHasOwn(BLOCK_PAYLOAD_TYPES, kind)) {
    throw new TypeErrorCtor(`isBlockKind: ${JSONStringify(kind)} is not a block kind with a typed payload`);
  }
  return block !== null && typeof block === "object" && (block as { kind?: unknown }).kind === kind;
}
