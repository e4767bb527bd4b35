/*
 * Typed keys inside the sandbox: getKey / setKey / deleteKey and key families. Pure ECMAScript (no Node APIs,
 * no zod): values are checked against the generated value-type descriptors (makeValueTypes), which mirror the
 * host's zod schemas, so a script sees the same refusal the host would give.
 */
import { KEY_FAMILIES, makeValueTypes, type ValueType } from "./constants.gen.js";
import { ObjectFreeze, ObjectKeys } from "./primordials.js";

export interface KeyRef {
  readonly id: string;
  readonly family: string;
  readonly type: string;
}

type Bag = Record<string, unknown>;

/** The value under `key`, or undefined when missing. Throws when the stored value breaks the key's type. */
export function getKey(bag: Bag, key: KeyRef): unknown {
  checkArguments("getKey", bag, key);
  if (!Object.hasOwn(bag, key.id)) return undefined;
  const problem = valueProblem(bag[key.id], key.type);
  if (problem !== undefined) throw new TypeError(`${key.id}: stored value does not match its type "${key.type}": ${problem}`);
  return bag[key.id];
}

/** Stores `value` under `key`. Throws, storing nothing, when the value is not JSON or breaks the key's type. */
export function setKey(bag: Bag, key: KeyRef, value: unknown): void {
  checkArguments("setKey", bag, key);
  const problem = valueProblem(value, key.type);
  if (problem !== undefined) throw new TypeError(`${key.id}: refused: ${problem}`);
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
  if (typeof suffix !== "string" || !KEY_SUFFIX.test(suffix)) {
    throw new TypeError(`${id}: suffix must be non-empty letters, digits, '_', '-' or '.'`);
  }
  return Object.freeze({ id, family: family.family, type: family.type });
}

function checkArguments(operation: string, bag: unknown, key: unknown): void {
  if (typeof bag !== "object" || bag === null || Array.isArray(bag)) {
    throw new TypeError(`${operation}: the bag must be an object (turn.data, turn.metadata or block.metadata)`);
  }
  if (typeof key !== "object" || key === null || typeof (key as KeyRef).id !== "string") {
    throw new TypeError(`${operation}: the key must be one of hookbox's keys (import { keys } from "hookbox")`);
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
  const notJson = jsonProblem(value, "$", new Set());
  if (notJson !== undefined) return notJson;
  const table = valueTypeTable();
  // A key built by hand with an unknown type is checked as JSON only.
  const type = Object.hasOwn(table, typeName) ? table[typeName]! : { kind: "json" as const };
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
      return Number.isInteger(value) ? undefined : `${path}: expected integer, got ${describe(value)}`;
    case "json":
      return undefined;
    case "json-object":
      return isPlainObject(value) ? undefined : `${path}: expected object, got ${describe(value)}`;
    case "enum":
      return type.values.includes(value as string)
        ? undefined
        : `${path}: expected one of ${type.values.map((v) => JSON.stringify(v)).join(", ")}, got ${describe(value)}`;
    case "list": {
      if (!Array.isArray(value)) return `${path}: expected list, got ${describe(value)}`;
      const items = valueTypeTable()[type.items]!;
      for (let index = 0; index < value.length; index++) {
        const problem = typeProblem(value[index], items, `${path}[${index}]`);
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    case "object": {
      if (!isPlainObject(value)) return `${path}: expected object, got ${describe(value)}`;
      for (const [name, field] of Object.entries(type.fields)) {
        if (!Object.hasOwn(value, name)) {
          if (field.optional) continue;
          return `${path}.${name}: required field is missing`;
        }
        const problem = typeProblem(value[name], valueTypeTable()[field.type]!, `${path}.${name}`);
        if (problem !== undefined) return problem;
      }
      if (!type.extra) {
        const unknown = Object.keys(value).find((name) => !Object.hasOwn(type.fields, name));
        if (unknown !== undefined) return `${path}.${unknown}: unknown field`;
      }
      return undefined;
    }
  }
}

function jsonProblem(value: unknown, path: string, seen: Set<object>): string | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? undefined : `${path}: ${value} is not a JSON number`;
  if (typeof value !== "object") return `${path}: ${describe(value)} is not JSON`;
  if (seen.has(value)) return `${path}: circular reference is not JSON`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        const problem = jsonProblem(value[index], `${path}[${index}]`, seen);
        if (problem !== undefined) return problem;
      }
      return undefined;
    }
    if (!isPlainObject(value)) return `${path}: ${describe(value)} is not JSON`;
    for (const [name, inner] of Object.entries(value)) {
      const problem = jsonProblem(inner, `${path}.${name}`, seen);
      if (problem !== undefined) return problem;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "list";
  if (typeof value === "object") return (value as object).constructor?.name ?? "object";
  return typeof value;
}
