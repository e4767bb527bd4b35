/*
 * The shape of codegen/spec.json once validated. The spec is the single source of key ids, block kinds and the
 * enums scripts see; everything under "GENERATED" headers is derived from it by `hookbox codegen`.
 */

export type KeyFamilyName = "turn_data" | "turn_metadata" | "block_metadata" | "run_metadata";
export const KEY_FAMILY_NAMES: readonly KeyFamilyName[] = ["turn_data", "turn_metadata", "block_metadata", "run_metadata"];

/** Value types every spec may use without declaring them. */
export const PRIMITIVE_TYPES = ["string", "number", "integer", "boolean", "string-list", "json", "json-object"] as const;
export type PrimitiveType = (typeof PRIMITIVE_TYPES)[number];

export interface NamedValue {
  constant: string;
  value: string;
  doc?: string;
}

/** A block kind; `payload` names the object shape its payload has (kinds without one carry any JSON object). */
export interface BlockKindSpec extends NamedValue {
  payload?: string;
}

export interface ShapeField {
  type: string;
  optional: boolean;
}

/** A named value type: an object with fields (optionally keeping extra JSON fields), a string enum, or a list. */
export type Shape =
  | { kind: "object"; name: string; typeName: string; doc?: string; fields: Record<string, ShapeField>; extraJson: boolean }
  | { kind: "enum"; name: string; typeName: string; doc?: string; values: string[] }
  | { kind: "list"; name: string; typeName: string; doc?: string; items: string };

export interface KeySpec {
  family: KeyFamilyName;
  constant: string;
  value: string;
  version: number;
  type: string;
  doc?: string;
  /** `namespace.value@vN` */
  id: string;
}

/** A family of keys sharing a prefix, one per suffix: `namespace.value.<suffix>@vN`. */
export interface KeyFamilySpec {
  function: string;
  family: KeyFamilyName;
  value: string;
  version: number;
  type: string;
  doc?: string;
  /** `namespace.value` */
  prefix: string;
}

export interface EnumSpec {
  constant: string;
  typeName?: string;
  values: string[];
}

export interface Spec {
  namespace: string;
  blockKinds: BlockKindSpec[];
  payloadKeys: NamedValue[];
  shapes: Shape[];
  keys: KeySpec[];
  keyFamilies: KeyFamilySpec[];
  enums: EnumSpec[];
}

/** The group a family's keys are exported under, host side and sandbox side. */
export const FAMILY_GROUPS: Record<KeyFamilyName, { host: string; runtime: string }> = {
  turn_data: { host: "TurnDataKeys", runtime: "turnData" },
  turn_metadata: { host: "TurnMetadataKeys", runtime: "turnMetadata" },
  block_metadata: { host: "BlockMetadataKeys", runtime: "blockMetadata" },
  run_metadata: { host: "RunMetadataKeys", runtime: "runMetadata" },
};
