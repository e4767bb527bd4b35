import { FAMILY_GROUPS, KEY_FAMILY_NAMES, type Spec } from "./spec.js";
import { quote, valueTypeTable } from "./value-types.js";
import { banner, enumLines, objectLiteral } from "./emit-common.js";

/**
 * runtime/constants.gen.ts: the constants the in-sandbox runtime exposes to scripts. Plain data only (no zod,
 * no imports from src/): it is bundled into the isolate. Keys carry their value type's name; makeValueTypes
 * describes each type so runtime/keys.ts can check values the way the host's zod schemas do.
 */
export function emitRuntimeConstants(spec: Spec): string {
  const out: string[] = [banner("//")];
  out.push(`export const NAMESPACE = ${quote(spec.namespace)};`, "");
  out.push(`export const BLOCK_KINDS = Object.freeze([${spec.blockKinds.map((kind) => quote(kind.value)).join(", ")}] as const);`);
  out.push("export type BlockKind = (typeof BLOCK_KINDS)[number];");
  out.push(
    `export const BlockKinds = Object.freeze(${objectLiteral(spec.blockKinds.map((kind) => [kind.constant, quote(kind.value)]))} as const);`,
    "",
  );
  out.push(
    `export const PayloadKeys = Object.freeze(${objectLiteral(spec.payloadKeys.map((key) => [key.constant, quote(key.value)]))} as const);`,
    "",
  );

  const typed = spec.blockKinds.filter((kind) => kind.payload !== undefined);
  out.push(
    "/** The value type of each block kind's payload (a name in VALUE_TYPES). */",
    `export const BLOCK_PAYLOAD_TYPES: Readonly<Record<string, string>> = Object.freeze(${objectLiteral(typed.map((kind) => [kind.value, quote(kind.payload!)]))});`,
    "",
  );

  out.push("export interface RuntimeKey {", "  readonly id: string;", "  readonly family: string;", "  readonly type: string;", "}", "");
  const groups = KEY_FAMILY_NAMES.map((family): [string, string] => {
    const keys = spec.keys.filter((key) => key.family === family);
    const entries = keys.map((key): [string, string, string?] => [
      key.constant,
      `key(${quote(key.id)}, ${quote(family)}, ${quote(key.type)})`,
      key.doc,
    ]);
    return [FAMILY_GROUPS[family].runtime, `Object.freeze(${objectLiteral(entries, "  ")})`];
  });
  out.push(`export const keys = Object.freeze(${objectLiteral(groups)});`, "");

  const families = spec.keyFamilies.map((family): [string, string] => [
    family.function,
    `Object.freeze({ prefix: ${quote(family.prefix)}, version: ${family.version}, family: ${quote(family.family)}, type: ${quote(family.type)} })`,
  ]);
  out.push("/** Key families: one key per suffix, `prefix.<suffix>@v<version>`. */");
  out.push(`export const KEY_FAMILIES = Object.freeze(${objectLiteral(families)});`, "");

  out.push(
    "/**",
    " * How runtime/keys.ts checks a value of each type (mirrors the host's zod schemas). A function, not a constant:",
    " * building the table is a fifth of a fresh context's set-up and most runs never check a key (keys.ts makes it",
    " * on first use, and freezes it).",
    " */",
    `export function makeValueTypes(): Record<string, ValueType> {`,
    `  return ${objectLiteral(
      Object.entries(valueTypeTable(spec)).map(([name, type]) => [quote(name), JSON.stringify(type)]),
      "  ",
    )};`,
    "}",
    "",
  );
  out.push(
    "export type ValueType =",
    '  | { kind: "string" | "number" | "integer" | "boolean" | "json" | "json-object" }',
    '  | { kind: "enum"; values: readonly string[] }',
    '  | { kind: "list"; items: string }',
    '  | { kind: "object"; fields: Readonly<Record<string, { type: string; optional: boolean }>>; extra: boolean };',
    "",
  );

  out.push(...enumLines(spec, "runtime"), "");
  out.push(
    "function key<Id extends string, F extends string>(id: Id, family: F, type: string): { readonly id: Id; readonly family: F; readonly type: string } {",
    "  return Object.freeze({ id, family, type });",
    "}",
  );
  return `${out.join("\n").trimEnd()}\n`;
}
