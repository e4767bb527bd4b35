import { isParsedObject, type JsonObject } from "./json.js";
import { PayloadKeys } from "./keys.gen.js";
import type { Block } from "./turn.js";

/** A call as a tool_call or provider_tool_call block holds it. */
export interface CallFields {
  id: string;
  name: string;
  args: JsonObject;
  /** The model's argument text when it is not a JSON object (`args` is then `{}`). */
  rawArgs?: string;
}

/**
 * A model's argument text as the turn keeps it: the object it encodes, or `{}` and the text itself when it
 * encodes something else (or nothing parsable). Empty text is an empty object, as providers send it for a
 * call without arguments.
 */
export function parseCallArguments(input: string): { args: JsonObject; rawArgs?: string } {
  if (!input.trim()) return { args: {} };
  try {
    const value: unknown = JSON.parse(input);
    if (isParsedObject(value)) return { args: value };
  } catch {
    // not JSON: kept as text below
  }
  return { args: {}, rawArgs: input };
}

/** Sessions stored before raw_args existed marked unparsable arguments with this key inside `args`. */
const LEGACY_INVALID_ARGS = "__invalid_json__";
const LEGACY_PREFIX = /^arguments for .* are not a JSON object: /s;

/** A call block's fields, reading the legacy shape of unparsable arguments as today's `raw_args`. */
export function readCall(block: Block): CallFields {
  const payload = block.payload;
  const stored = payload[PayloadKeys.args];
  const args: JsonObject = isParsedObject(stored) ? stored : {};
  const raw = payload[PayloadKeys.rawArgs];
  const legacy = args[LEGACY_INVALID_ARGS];
  const fields: CallFields = { id: String(payload[PayloadKeys.id] ?? ""), name: String(payload[PayloadKeys.name] ?? ""), args };
  if (typeof raw === "string") fields.rawArgs = raw;
  else if (typeof legacy === "string" && Object.keys(args).length === 1) {
    fields.args = {};
    fields.rawArgs = legacy.replace(LEGACY_PREFIX, "");
  }
  return fields;
}
