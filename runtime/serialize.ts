import {
  ArrayIsArray,
  JSONStringify,
  NumberIsFinite,
  ObjectKeys,
  ReflectApply,
  RegExpPrototypeExec,
  StringCtor,
  arraySet,
  dict,
} from "./primordials.js";

/** A value a script handed back that is not bounded JSON data: reported with the JSON path of the culprit. */
export class GuestDataError {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {}
}

const MAX_DEPTH = 100;
const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function childPath(path: string, key: string | number): string {
  if (typeof key === "number") return path + "[" + key + "]";
  return RegExpPrototypeExec(identifier, key) !== null ? path + "." + key : path + "[" + JSONStringify(key) + "]";
}

/**
 * Copies `value` into plain JSON data and serializes it, inside the isolate and inside the caller's timed
 * segment: getters, proxies and toJSON run here (bounded by the callback's limits), never while the host
 * copies data out. Returns "" for `undefined` (a hook with no opinion). Throws GuestDataError.
 */
export function toBoundedJson(value: unknown, maxBytes: number): string {
  if (value === undefined) return "";
  const state: CopyState = { size: 0, maxBytes, ancestors: dict<unknown>(), depth: 0 };
  const copy = copyValue(value, "$", state, 0);
  const text = JSONStringify(copy) as string;
  if (text.length > maxBytes) throw new GuestDataError("$", "is larger than the " + maxBytes + "-byte limit");
  return text;
}

interface CopyState {
  size: number;
  maxBytes: number;
  /** The objects on the current path (a prototype-less dict indexed 0..depth-1: immune to Array.prototype setters). */
  ancestors: Record<string, unknown>;
  depth: number;
}

function grow(state: CopyState, bytes: number, path: string): void {
  state.size += bytes;
  if (state.size > state.maxBytes) throw new GuestDataError(path, "makes the value larger than the " + state.maxBytes + "-byte limit");
}

function copyValue(value: unknown, path: string, state: CopyState, depth: number): unknown {
  switch (typeof value) {
    case "string":
      grow(state, value.length + 2, path);
      return value;
    case "boolean":
      grow(state, 5, path);
      return value;
    case "number":
      if (!NumberIsFinite(value)) throw new GuestDataError(path, "is " + StringCtor(value) + ", which JSON cannot carry");
      grow(state, 8, path);
      return value;
    case "object":
      if (value === null) {
        grow(state, 4, path);
        return null;
      }
      return copyObject(value as object, path, state, depth);
    case "undefined":
      throw new GuestDataError(path, "is undefined, which JSON cannot carry");
    default:
      throw new GuestDataError(path, "is a " + typeof value + ", which JSON cannot carry");
  }
}

function copyObject(value: object, path: string, state: CopyState, depth: number): unknown {
  if (depth >= MAX_DEPTH) throw new GuestDataError(path, "is nested deeper than " + MAX_DEPTH + " levels");
  const ancestors = state.ancestors;
  for (let i = 0; i < state.depth; i++) {
    if (ancestors[i] === value) throw new GuestDataError(path, "is a cyclic reference");
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") {
    return copyValue(ReflectApply(toJSON, value, [""]), path, state, depth + 1);
  }
  ancestors[state.depth++] = value;
  let copy: unknown;
  if (ArrayIsArray(value)) {
    const length = (value as unknown[]).length;
    const out: unknown[] = [];
    grow(state, 2 + length, path);
    for (let i = 0; i < length; i++) {
      arraySet(out, i, copyValue((value as unknown[])[i], childPath(path, i), state, depth + 1));
    }
    copy = out;
  } else {
    const keys = ObjectKeys(value);
    const out = dict<unknown>();
    grow(state, 2, path);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const inner = (value as Record<string, unknown>)[key];
      if (inner === undefined) continue; // JSON semantics: an undefined property is absent
      grow(state, key.length + 4, path);
      out[key] = copyValue(inner, childPath(path, key), state, depth + 1);
    }
    copy = out;
  }
  ancestors[--state.depth] = undefined;
  return copy;
}
