import { isParsedObject, type Json } from "../turns/json.js";
import { BLOCK_KINDS } from "../turns/keys.gen.js";
import { jsonPath } from "./json-path.js";

/*
 * The structure of a turn checked by hand, for values that came out of JSON.parse (a script middleware's
 * turn): every leaf is JSON by construction, so only the shape is checked, in one pass over the blocks and
 * never into payloads. The cost is linear in the number of blocks, whatever their payloads hold, and a bad
 * turn reports its first problem only. Trusted host values go through TurnSchema (src/turns/turn.ts).
 */

export interface ShapeProblem {
  path: string;
  message: string;
}

const knownKinds = new Set<string>(BLOCK_KINDS);
const turnKeys = new Set(["id", "blocks", "metadata", "data"]);
const blockKeys = new Set(["id", "kind", "role", "payload", "metadata"]);

/** Drops keys a turn or block does not have, as TurnSchema's objects do. */
function keepOnly(object: Record<string, Json>, keys: Set<string>): void {
  for (const key of Object.keys(object)) if (!keys.has(key)) delete object[key];
}

function describe(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

/**
 * Checks `value` (JSON.parse output, owned by the caller) as a turn and normalizes it in place the way
 * TurnSchema does: unknown block kinds read as `other`, missing bags become `{}`, unknown keys go. Returns the problem, or
 * undefined when `value` is now a Turn.
 */
export function checkParsedTurn(value: Json | undefined): ShapeProblem | undefined {
  const problem = (path: PropertyKey[], message: string): ShapeProblem => ({ path: jsonPath(path), message });
  if (!isParsedObject(value)) return problem([], `expected a turn object, got ${describe(value)}`);
  if (typeof value.id !== "string" || value.id === "") return problem(["id"], "expected a non-empty string");
  if (!Array.isArray(value.blocks)) return problem(["blocks"], `expected an array, got ${describe(value.blocks)}`);
  for (const bag of ["metadata", "data"] as const) {
    if (value[bag] === undefined) value[bag] = {};
    else if (!isParsedObject(value[bag])) return problem([bag], `expected an object, got ${describe(value[bag])}`);
  }
  keepOnly(value, turnKeys);
  const blocks = value.blocks;
  for (let index = 0; index < blocks.length; index++) {
    const block = blocks[index];
    if (!isParsedObject(block)) return problem(["blocks", index], `expected a block object, got ${describe(block)}`);
    if (typeof block.id !== "string" || block.id === "") return problem(["blocks", index, "id"], "expected a non-empty string");
    if (typeof block.kind !== "string" || block.kind === "") return problem(["blocks", index, "kind"], "expected a non-empty string");
    if (!knownKinds.has(block.kind)) block.kind = "other";
    if (block.role !== undefined && typeof block.role !== "string")
      return problem(["blocks", index, "role"], `expected a string, got ${describe(block.role)}`);
    for (const bag of ["payload", "metadata"] as const) {
      if (block[bag] === undefined) block[bag] = {};
      else if (!isParsedObject(block[bag])) return problem(["blocks", index, bag], `expected an object, got ${describe(block[bag])}`);
    }
    keepOnly(block, blockKeys);
  }
  return undefined;
}
