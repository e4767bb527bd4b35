/*
 * Typed keys inside the sandbox: getKey / setKey / deleteKey and key families. Pure ECMAScript (no Node APIs,
 * no zod): values are checked against the generated value-type descriptors (makeValueTypes), which mirror the
 * host's zod schemas, so a script sees the same refusal the host would give. Like all runtime code it uses only
 * captured built-ins (primordials.ts): the values it checks are the script's, in a context the script may have
 * tampered with, and the host checks every key again on its side.
 */
import { KEY_FAMILIES, makeValueTypes, type ValueType } from "./constants.gen.js";
import {
  ArrayIsArray,
  JSONStringify,
  NumberIsFinite,
  NumberIsInteger,
  ObjectFreeze,
  ObjectHasOwn,
  ObjectKeys,
  ObjectPrototype,
  ReflectGetPrototypeOf,
  RegExpPrototypeExec,
  TypeErrorCtor,
  WeakMapCtor,
  WeakMapPrototypeGet,
  WeakMapPrototypeSet,
} from "./primordials.js";

export interface KeyRef {
  readonly id: string;
  readonly family: string;
  readonly type: string;
}

type Bag = Record<string, unknown>;

/** The value under `key`, or undefined when missing. Throws when the stored value breaks the key's type. */
export function getKey(bag: Bag, key: KeyRef): unknown {
  checkArguments("getKey", bag, key);
  if (!ObjectHasOwn(bag, key.id)) return undefined;
  const problem = valueProblem(bag[key.id], key.type);
  if (problem !== undefined) throw new TypeErrorCtor(`${key.id}: stored value does not match its type "${key.type}": ${problem}`);
  return bag[key.id];
}

/** Stores `value` under `key`. Throws, storing nothing, when the value is not JSON or breaks the key's type. */
export function setKey(bag: Bag, key: KeyRef, value: unknown): void {
  checkArguments("setKey", bag, key);
  const problem = valueProblem(value, key.type);
  if (problem !== undefined) throw new TypeErrorCtor(`${key.id}: refused: ${problem}`);
  bag[key.id] = value;
}

export function deleteKey(bag: Bag, key: KeyRef): void {
  checkArguments("deleteKey", bag, key);
  delete bag[key.id];
}

const KEY_SUFFIX = /^[A-Za-z0-9_.-]+$/;

/** `hookbox.context_restart_disabled.<suffix>@v1`: set once a restart of that suffix was applied. */
export function contextRestartDisabledKey(suffix: string): KeyRef {
  const family = KEY_FAMILIES.contextRestartDisabledKey;
  const id = `${family.prefix}.${suffix}@v${family.version}`;
  if (typeof suffix !== "string" || RegExpPrototypeExec(KEY_SUFFIX, suffix) === null) {
    throw new TypeErrorCtor(`${id}: suffix must be non-empty letters, digits, '_', '-' or '.'`);
  }
  return ObjectFreeze({ id, family: family.family, type: family.type });
}

function checkArguments(operation: string, bag: unknown, key: unknown): void {
  if (typeof bag !== "object" || bag === null || ArrayIsArray(bag)) {
    throw new TypeErrorCtor(`${operation}: the bag must be an object (turn.data, turn.metadata or block.metadata)`);
  }
  if (typeof key !== "object" || key === null || typeof (key as KeyRef).id !== "string") {
    throw new TypeErrorCtor(`${operation}: the key must be one of hookbox's keys (import { keys } from "hookbox")`);
  }
}

let valueTypes: Readonly<Record<string, ValueType>> | undefined;

/**
 * The value-type table, made and deep-frozen in this context when a key is first checked: most runs never
 * check one, and making it at install was a fifth of a fresh context's cost. It may be made after script code
 * ran, so it is frozen with captured built-ins only (no Object.values, no iterator, no Object.freeze a script
 * could have replaced): the same objects end up frozen as when it was made before any script code.
 */
export function valueTypeTable(): Readonly<Record<string, ValueType>> {
  if (valueTypes === undefined) valueTypes = deepFreeze(makeValueTypes());
  return valueTypes;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    const names = ObjectKeys(value);
    for (let index = 0; index < names.length; index++) deepFreeze((value as Record<string, unknown>)[names[index]!]);
    ObjectFreeze(value);
  }
  return value;
}

/** Why `value` is not a JSON value of `typeName`, or undefined when it is. Paths look like `$.fields[0].name`. */
export function valueProblem(value: unknown, typeName: string): string | undefined {
  const notJson = jsonProblem(value, "$", new WeakMapCtor());
  if (notJson !== undefined) return notJson;
  const table = valueTypeTable();
  // A key built by hand with an unknown type is checked as JSON only.
  const type = ObjectHasOwn(table, typeName) ? table[typeName]! : { kind: "json" as const };
  return typeProblem(value, type, "$");
}

function typeProblem(value: unknown, type: ValueType, path: string): string | undefined {
  switch (type.kind) {
    case "string":
    case "boolean":
      return typeof value === type.kind ? undefined : `${path}: expected ${type.kind}, got ${describe(value)}`;
    case "number":
      return typeof value === "number" ? undefined : `${path}: expected number, got ${describe(value)}`;
    case "integer":
      return NumberIsInteger(value) ? undefined : `${path}: expected integer, got ${describe(value)}`;
    case "json":
      return undefined;
    case "json-object":
      return isPlainObject(value) ? undefined : `${path}: expected object, got ${describe(value)}`;
    case "enum": {
      let listed = "";
      for (let index = 0; index < type.values.length; index++) {
        if (type.values[index] === value) return undefined;
        listed += (index === 0 ? "" : ", ") + JSONStringify(type.values[index]);
      }
      return `${path}: expected one of ${listed}, got ${describe(value)}`;
    }
    case "list": {
      if (!ArrayIsArray(value)) return `${path}: expected list, got ${describe(value)}`;
      const items = valueTypeTable()[type.items]!;
      for (let index = 0; index < value.length; index++) {
        const problem = typeProblem(value[index], items, `${path}[${index}]`);
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    case "object": {
      if (!isPlainObject(value)) return `${path}: expected object, got ${describe(value)}`;
      const names = ObjectKeys(type.fields);
      for (let index = 0; index < names.length; index++) {
        const name = names[index]!;
        const field = type.fields[name]!;
        if (!ObjectHasOwn(value, name)) {
          if (field.optional) continue;
          return `${path}.${name}: required field is missing`;
        }
        const problem = typeProblem(value[name], valueTypeTable()[field.type]!, `${path}.${name}`);
        if (problem !== undefined) return problem;
      }
      if (!type.extra) {
        const present = ObjectKeys(value);
        for (let index = 0; index < present.length; index++) {
          if (!ObjectHasOwn(type.fields, present[index]!)) return `${path}.${present[index]}: unknown field`;
        }
      }
      return undefined;
    }
  }
}

/** `onPath`: the objects on the path to `value`, marked true while their members are checked. */
function jsonProblem(value: unknown, path: string, onPath: WeakMap<object, unknown>): string | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") return NumberIsFinite(value) ? undefined : `${path}: ${value} is not a JSON number`;
  if (typeof value !== "object") return `${path}: ${describe(value)} is not JSON`;
  if (WeakMapPrototypeGet(onPath, value) === true) return `${path}: circular reference is not JSON`;
  WeakMapPrototypeSet(onPath, value, true);
  try {
    if (ArrayIsArray(value)) {
      for (let index = 0; index < value.length; index++) {
        const problem = jsonProblem(value[index], `${path}[${index}]`, onPath);
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    if (!isPlainObject(value)) return `${path}: ${describe(value)} is not JSON`;
    const names = ObjectKeys(value);
    for (let index = 0; index < names.length; index++) {
      const problem = jsonProblem(value[names[index]!], `${path}.${names[index]}`, onPath);
      if (problem !== undefined) return problem;
    }
    return undefined;
  } finally {
    WeakMapPrototypeSet(onPath, value, false);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || ArrayIsArray(value)) return false;
  const prototype = ReflectGetPrototypeOf(value);
  return prototype === ObjectPrototype || prototype === null;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (ArrayIsArray(value)) return "list";
  if (typeof value === "object") return (value as object).constructor?.name ?? "object";
  return typeof value;
}
