import type { LazyJson } from "./lazy-json.js";
import { isOwn, markOwn } from "./own-errors.js";
import {
  ArrayIsArray,
  JSONStringify,
  NumberIsFinite,
  ObjectCreate,
  ObjectDefineProperty,
  ObjectKeys,
  ReflectApply,
  RegExpPrototypeExec,
  StringCtor,
  dict,
} from "./primordials.js";

/** A value a script handed back that is not bounded JSON data: reported with the JSON path of the culprit. */
export class GuestDataError {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    markOwn(this);
  }
}

/** Whether `thrown` is a GuestDataError, without running anything of a script's (own-errors.ts). */
export function isGuestDataError(thrown: unknown): thrown is GuestDataError {
  return isOwn(thrown) && thrown instanceof GuestDataError;
}

const MAX_DEPTH = 100;
const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

interface CopyState {
  size: number;
  maxBytes: number;
  depth: number;
  /** The objects on the current path and their keys: prototype-less dicts indexed 0..depth-1 (immune to Array.prototype setters). */
  ancestors: Record<number, unknown>;
  keys: Record<number, string | number>;
  /** One reused descriptor: defining array elements this way runs no setter a script put on a prototype. */
  element: PropertyDescriptor;
}

/** Thrown by the replacer: the value is not bounded JSON; the diagnostic walk then names the culprit. */
const NOT_JSON = ObjectCreate(null) as object;

/**
 * Serializes `value` inside the isolate and inside the caller's timed segment, with the JSON.stringify
 * captured before any script ran: getters, proxies and toJSON run here, once, bounded by the callback's
 * limits, never while the host copies data out. A replacer (called by the native serializer, not through
 * anything a script can replace) refuses what JSON cannot carry, keeps a running size bound and the
 * nesting depth; only when it refuses does the slower copy walk run, to report the JSON path of the
 * culprit. Returns "" for `undefined` (a hook with no opinion). Throws GuestDataError.
 *
 * `lazy` (lazy-json.ts): when the returned object holds that value, untouched, as one of its own
 * properties, the property is left out of the text and its key reported in `splice.key`: the host, which
 * sent the value's text, puts it back (no parsing or serializing it here).
 */
export function toBoundedJson(value: unknown, maxBytes: number, lazy?: LazyJson, splice?: { key?: string }): string {
  if (value === undefined) return "";
  // Holders on the current path (prototype-less, so Array.prototype setters cannot see them).
  const holders = dict<unknown>();
  let top = -1;
  let lastObject: unknown;
  let size = 0;
  const spliceTarget = lazy !== undefined && splice !== undefined && !ArrayIsArray(value) ? lazy.value : undefined;
  const replacer = function (this: unknown, key: string, inner: unknown): unknown {
    const holder = this;
    if (holder !== holders[top]) {
      if (top === -1 || holder === lastObject) holders[++top] = holder;
      else while (top > 0 && holders[top] !== holder) top--;
    }
    if (spliceTarget !== undefined && inner === spliceTarget && holder === value && splice!.key === undefined && lazy!.untouched()) {
      splice!.key = key;
      return undefined; // left out: the host puts it back
    }
    switch (typeof inner) {
      case "string":
        size += inner.length + key.length + 4;
        break;
      case "number":
        if (!NumberIsFinite(inner)) throw NOT_JSON;
        size += key.length + 12;
        break;
      case "boolean":
        size += key.length + 9;
        break;
      case "object":
        size += key.length + 8;
        // holders[0] is the serializer's wrapper: an object's ancestors are the holders above it.
        if (inner !== null) {
          if (top >= MAX_DEPTH) throw NOT_JSON;
          lastObject = inner; // its properties come next, with it as the holder
        }
        break;
      case "undefined":
        // JSON semantics: an undefined property is absent; an undefined array element is refused.
        if (ArrayIsArray(holder)) throw NOT_JSON;
        return undefined;
      default:
        throw NOT_JSON;
    }
    if (size > maxBytes) throw NOT_JSON;
    return inner;
  };
  let text: string | undefined;
  try {
    text = JSONStringify(value, replacer) as string | undefined;
  } catch (thrown) {
    // Refused, a cycle (the serializer's TypeError) or the script's own exception from a getter or toJSON:
    // the walk names the culprit, or throws the script's exception again.
    diagnose(value, maxBytes);
    if (thrown !== NOT_JSON) throw thrown;
    throw new GuestDataError("$", "changed while it was serialized (its getters returned different values)");
  }
  if (text === undefined) throw new GuestDataError("$", "is not JSON data");
  if (text.length > maxBytes) throw new GuestDataError("$", "is larger than the " + maxBytes + "-byte limit");
  return text;
}

/** The copy walk of the old serializer, run only to name the culprit: throws GuestDataError where it is. */
function diagnose(value: unknown, maxBytes: number): void {
  const element = ObjectCreate(null) as PropertyDescriptor;
  element.writable = true;
  element.enumerable = true;
  element.configurable = true;
  const state: CopyState = { size: 0, maxBytes, depth: 0, ancestors: dict<unknown>(), keys: dict<string | number>(), element };
  copyValue(value, state);
}

/** The JSON path of the value being copied; built only when reporting a problem. */
function currentPath(state: CopyState): string {
  let path = "$";
  for (let i = 1; i <= state.depth; i++) {
    const key = state.keys[i];
    path +=
      typeof key === "number"
        ? "[" + key + "]"
        : RegExpPrototypeExec(identifier, key) !== null
          ? "." + key
          : "[" + JSONStringify(key) + "]";
  }
  return path;
}

function fail(state: CopyState, problem: string): never {
  throw new GuestDataError(currentPath(state), problem);
}

function grow(state: CopyState, bytes: number): void {
  state.size += bytes;
  if (state.size > state.maxBytes) fail(state, "makes the value larger than the " + state.maxBytes + "-byte limit");
}

function copyValue(value: unknown, state: CopyState, viaToJSON = false): unknown {
  switch (typeof value) {
    case "string":
      grow(state, value.length + 2);
      return value;
    case "boolean":
      grow(state, 5);
      return value;
    case "number":
      if (!NumberIsFinite(value)) fail(state, "is " + StringCtor(value) + ", which JSON cannot carry");
      grow(state, 8);
      return value;
    case "object":
      if (value === null) {
        grow(state, 4);
        return null;
      }
      return copyObject(value as object, state, viaToJSON);
    case "undefined":
      return fail(state, "is undefined, which JSON cannot carry");
    default:
      return fail(state, "is a " + typeof value + ", which JSON cannot carry");
  }
}

function copyObject(value: object, state: CopyState, viaToJSON: boolean): unknown {
  if (state.depth >= MAX_DEPTH) fail(state, "is nested deeper than " + MAX_DEPTH + " levels");
  const ancestors = state.ancestors;
  for (let i = 0; i < state.depth; i++) {
    if (ancestors[i] === value) fail(state, "is a cyclic reference");
  }
  const toJSON = viaToJSON ? undefined : (value as { toJSON?: unknown }).toJSON;
  // Like JSON.stringify: toJSON's result stands in for the value (once per position).
  if (typeof toJSON === "function") return copyValue(ReflectApply(toJSON, value, [""]), state, true);
  const level = state.depth;
  ancestors[level] = value;
  state.depth = level + 1;
  let copy: unknown;
  if (ArrayIsArray(value)) {
    const length = (value as unknown[]).length;
    const out: unknown[] = [];
    grow(state, 2 + length);
    const element = state.element;
    for (let i = 0; i < length; i++) {
      state.keys[level + 1] = i;
      element.value = copyValue((value as unknown[])[i], state);
      ObjectDefineProperty(out, i, element);
    }
    element.value = undefined;
    copy = out;
  } else {
    const keys = ObjectKeys(value);
    const out = dict<unknown>();
    grow(state, 2);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const inner = (value as Record<string, unknown>)[key];
      if (inner === undefined) continue; // JSON semantics: an undefined property is absent
      state.keys[level + 1] = key;
      grow(state, key.length + 4);
      out[key] = copyValue(inner, state);
    }
    copy = out;
  }
  state.depth = level;
  ancestors[level] = undefined;
  return copy;
}
