import { FAMILY_GROUPS, KEY_FAMILY_NAMES, type Spec } from "./spec.js";
import { quote, shapeTs, tsFor } from "./value-types.js";
import { banner, docComment, enumLines } from "./emit-common.js";

/**
 * types/turns.d.ts: what script authors compile against. Constants have literal types and every key carries
 * its value type, so `setKey(bag, keys.turnMetadata.model, 42)` is a compile error.
 */
export function emitTurnsDts(spec: Spec): string {
  const out: string[] = [banner("//")];
  out.push(
    "/** A JSON value: everything that crosses the sandbox boundary is one. */",
    "export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };",
    "export type JsonObject = { [key: string]: Json };",
    "",
    `export type KeyFamily = ${KEY_FAMILY_NAMES.map(quote).join(" | ")};`,
    "",
    "/** A typed key with a versioned id (`namespace.value@vN`). Read and write it with getKey / setKey. */",
    "export interface Key<T, Id extends string = string, F extends KeyFamily = KeyFamily> {",
    "  readonly id: Id;",
    "  readonly family: F;",
    "  /** The value type's name in codegen/spec.json. */",
    "  readonly type: string;",
    "  /** Never present at run time: carries the value type for the compiler. */",
    "  readonly __valueType?: T;",
    "}",
    "",
    `export declare const NAMESPACE: ${quote(spec.namespace)};`,
    "",
    `export declare const BLOCK_KINDS: readonly [${spec.blockKinds.map((kind) => quote(kind.value)).join(", ")}];`,
    "export type BlockKind = (typeof BLOCK_KINDS)[number];",
    `export declare const BlockKinds: ${typeLiteral(spec.blockKinds.map((kind) => [kind.constant, quote(kind.value), kind.doc]))};`,
    "",
    `export declare const PayloadKeys: ${typeLiteral(spec.payloadKeys.map((key) => [key.constant, quote(key.value), key.doc]))};`,
    "export type PayloadKey = (typeof PayloadKeys)[keyof typeof PayloadKeys];",
    "",
  );

  for (const shape of spec.shapes) {
    out.push(...docComment(shape.doc), `export type ${shape.typeName} = ${shapeTs(spec, shape)};`, "");
  }

  const groups = KEY_FAMILY_NAMES.map((family): [string, string] => {
    const entries = spec.keys
      .filter((key) => key.family === family)
      .map((key): [string, string, string?] => [
        key.constant,
        `Key<${tsFor(spec, key.type)}, ${quote(key.id)}, ${quote(family)}>`,
        key.doc,
      ]);
    return [FAMILY_GROUPS[family].runtime, typeLiteral(entries, "  ")];
  });
  out.push("/** Every key, by family. */", `export declare const keys: ${typeLiteral(groups)};`, "");

  for (const family of spec.keyFamilies) {
    out.push(...docComment(`${family.doc ?? ""} Key family \`${family.prefix}.<suffix>@v${family.version}\` (${family.family}).`.trim()));
    out.push(
      `export declare function ${family.function}<S extends string>(suffix: S): Key<${tsFor(spec, family.type)}, \`${family.prefix}.\${S}@v${family.version}\`, ${quote(family.family)}>;`,
      "",
    );
  }

  out.push(...enumLines(spec, "dts"), "");
  out.push(
    '/** One item of a turn. Unknown kinds read as "other". */',
    "export interface Block {",
    "  id: string;",
    "  kind: BlockKind;",
    "  role?: string;",
    "  payload: JsonObject;",
    "  metadata: JsonObject;",
    "}",
    "",
    "/** The payload of each block kind that has a typed one. */",
    `export interface BlockPayloads ${typeLiteral(spec.blockKinds.filter((kind) => kind.payload !== undefined).map((kind) => [kind.value, tsFor(spec, kind.payload!), kind.doc]))}`,
    "",
    "/** A block of kind `K`, its payload typed. */",
    'export type BlockOf<K extends keyof BlockPayloads> = Omit<Block, "kind" | "payload"> & { kind: K; payload: BlockPayloads[K] };',
    "",
    "/** Narrows a block by its kind: `if (isBlockKind(block, BlockKinds.reasoning)) block.payload.text`. */",
    "export declare function isBlockKind<K extends keyof BlockPayloads>(block: Block, kind: K): block is Block & BlockOf<K>;",
    "",
    "/** The conversation a loop works on; `metadata` and `data` are keyed by key ids (see `keys`). */",
    "export interface Turn {",
    "  id: string;",
    "  blocks: Block[];",
    "  metadata: JsonObject;",
    "  data: JsonObject;",
    "}",
  );
  return `${out.join("\n").trimEnd()}\n`;
}

function typeLiteral(entries: [string, string, string?][], indent = ""): string {
  if (entries.length === 0) return "{}";
  const lines = entries.flatMap(([name, type, doc]) => [...docComment(doc, `${indent}  `), `${indent}  readonly ${name}: ${type};`]);
  return `{\n${lines.join("\n")}\n${indent}}`;
}
