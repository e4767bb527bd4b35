import { HookboxError } from "../src/errors.js";
import {
  KEY_FAMILY_NAMES,
  PRIMITIVE_TYPES,
  type EnumSpec,
  type KeyFamilyName,
  type KeyFamilySpec,
  type BlockKindSpec,
  type KeySpec,
  type NamedValue,
  type Shape,
  type ShapeField,
  type Spec,
} from "./spec.js";

/** Every problem found in a spec, each naming the file, the entry and the rule; raised before anything is written. */
export class CodegenSpecError extends HookboxError {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(
      "CONFIG",
      `${file}: invalid codegen spec (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n  ${problems.join("\n  ")}`,
      {
        file,
        problems,
      },
    );
    this.name = "CodegenSpecError";
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const SNAKE_VALUE = /^[a-z][a-z0-9_]*$/;
const UPPER_CONSTANT = /^[A-Z][A-Z0-9_]*$/;
const TYPE_NAME = /^[A-Z][A-Za-z0-9]*$/;
/** Names the generated modules define themselves; a spec type may not shadow them. */
const RESERVED_TYPE_NAMES = new Set(["Json", "JsonObject", "Key", "KeyFamily", "TypedKey", "Turn", "Block", "BlockKind", "PayloadKey"]);

type Raw = Record<string, unknown>;

/** Validates the parsed JSON of a spec file. Throws CodegenSpecError listing every problem. */
export function validateSpec(raw: unknown, file: string): Spec {
  const problems: string[] = [];
  const report = (entry: string, rule: string) => problems.push(`${entry}: ${rule}`);
  if (!isObject(raw)) throw new CodegenSpecError(file, ["(root): must be a JSON object"]);

  const namespace = typeof raw.namespace === "string" ? raw.namespace : "";
  if (namespace === "") report("namespace", "namespace must be a non-empty string");
  else if (!SNAKE_VALUE.test(namespace)) report(`namespace ("${namespace}")`, "namespace must be lowercase snake_case");

  const blockKinds = namedValues(raw, "blockKinds", report);
  if (blockKinds.length > 0 && !blockKinds.some((kind) => kind.value === "other")) {
    report("blockKinds", 'must include the value "other" (unknown kinds read as other)');
  }
  const payloadKeys = namedValues(raw, "payloadKeys", report);
  const shapes = shapeList(raw, report);
  const kinds = blockPayloads(raw, blockKinds, shapes, report);
  const knownTypes = new Set<string>([...PRIMITIVE_TYPES, ...shapes.map((shape) => shape.name)]);
  const ids = new Map<string, string>();
  const keys = keyList(raw, namespace, knownTypes, ids, report);
  const keyFamilies = keyFamilyList(raw, namespace, knownTypes, ids, report);
  const enums = enumList(raw, shapes, report);

  if (problems.length > 0) throw new CodegenSpecError(file, problems);
  return { namespace, blockKinds: kinds, payloadKeys, shapes, keys, keyFamilies, enums };
}

/** Each block kind's `payload`, when given, names an object shape (declared anywhere in `shapes`). */
function blockPayloads(raw: Raw, kinds: NamedValue[], shapes: Shape[], report: Report): BlockKindSpec[] {
  const items = (Array.isArray(raw.blockKinds) ? raw.blockKinds : []).filter(isObject);
  return kinds.map((kind, index) => {
    const payload = items.find((item) => item.value === kind.value)?.payload;
    if (payload === undefined) return kind;
    const shape = typeof payload === "string" ? shapes.find((candidate) => candidate.name === payload) : undefined;
    if (shape?.kind !== "object") {
      report(`blockKinds[${index}] ("${kind.value}")`, `payload must name an object shape (got ${JSON.stringify(payload)})`);
      return kind;
    }
    return { ...kind, payload: shape.name };
  });
}

type Report = (entry: string, rule: string) => void;

function namedValues(raw: Raw, field: string, report: Report): NamedValue[] {
  const list = arrayField(raw, field, report);
  const constants = new Map<string, string>();
  const values = new Map<string, string>();
  return list.flatMap((item, index) => {
    const entry = `${field}[${index}]`;
    if (!isObject(item)) return (report(entry, "must be an object {constant, value}"), []);
    const constant = stringField(item, "constant");
    const value = stringField(item, "value");
    const name = `${entry} ("${constant || value}")`;
    if (!IDENTIFIER.test(constant)) report(name, "constant must be a non-empty identifier");
    if (value === "") report(name, "value must be a non-empty string");
    else if (!SNAKE_VALUE.test(value)) report(name, "value must be lowercase snake_case");
    unique(constants, constant, name, "duplicate constant name", report);
    unique(values, value, name, "duplicate value", report);
    return [{ constant, value, ...doc(item) }];
  });
}

function shapeList(raw: Raw, report: Report): Shape[] {
  const names = new Map<string, string>();
  const typeNames = new Map<string, string>();
  const declared = new Set<string>(PRIMITIVE_TYPES);
  const shapes: Shape[] = [];
  arrayField(raw, "shapes", report).forEach((item, index) => {
    const entry = `shapes[${index}]`;
    if (!isObject(item)) return report(entry, "must be an object {name, typeName, fields|enum|listOf}");
    const name = stringField(item, "name");
    const typeName = stringField(item, "typeName");
    const label = `${entry} ("${name}")`;
    if (!IDENTIFIER.test(name)) report(label, "name must be a non-empty identifier");
    else if (declared.has(name) && (PRIMITIVE_TYPES as readonly string[]).includes(name))
      report(label, `name "${name}" is a built-in type`);
    if (!TYPE_NAME.test(typeName)) report(label, "typeName must be a PascalCase identifier");
    else if (RESERVED_TYPE_NAMES.has(typeName)) report(label, `typeName "${typeName}" is reserved by the generated modules`);
    unique(names, name, label, "duplicate shape name", report);
    unique(typeNames, typeName, label, "duplicate type name", report);
    const forms = ["fields", "enum", "listOf"].filter((form) => item[form] !== undefined);
    if (forms.length !== 1) report(label, "must have exactly one of fields, enum, listOf");
    const checkType = (type: string, where: string) => {
      if (!declared.has(type))
        report(
          `${label} ${where}`,
          `unknown type "${type}" (built-ins: ${PRIMITIVE_TYPES.join(", ")}; shapes must be declared before use)`,
        );
    };
    if (item.fields !== undefined) {
      if (!isObject(item.fields)) report(label, "fields must be an object of {type, optional?}");
      const fields: Record<string, ShapeField> = {};
      for (const [fieldName, field] of Object.entries(isObject(item.fields) ? item.fields : {})) {
        if (!IDENTIFIER.test(fieldName)) report(`${label} field "${fieldName}"`, "field name must be an identifier");
        const type = isObject(field) ? stringField(field, "type") : "";
        checkType(type, `field "${fieldName}"`);
        fields[fieldName] = { type, optional: isObject(field) && field.optional === true };
      }
      if (item.extra !== undefined && item.extra !== "json") report(label, 'extra must be "json" when present');
      shapes.push({ kind: "object", name, typeName, fields, extraJson: item.extra === "json", ...doc(item) });
    } else if (item.enum !== undefined) {
      const values = Array.isArray(item.enum) ? item.enum : [];
      if (values.length === 0) report(label, "enum must be a non-empty list of strings");
      if (values.some((value) => typeof value !== "string" || value === "")) report(label, "enum values must be non-empty strings");
      if (new Set(values).size !== values.length) report(label, "enum values must be unique");
      shapes.push({ kind: "enum", name, typeName, values: values.map(String), ...doc(item) });
    } else if (item.listOf !== undefined) {
      const items = typeof item.listOf === "string" ? item.listOf : "";
      checkType(items, "listOf");
      shapes.push({ kind: "list", name, typeName, items, ...doc(item) });
    }
    declared.add(name);
  });
  return shapes;
}

function keyList(raw: Raw, namespace: string, knownTypes: Set<string>, ids: Map<string, string>, report: Report): KeySpec[] {
  const constants = new Map<string, string>();
  return arrayField(raw, "keys", report).flatMap((item, index) => {
    const entry = `keys[${index}]`;
    if (!isObject(item)) return (report(entry, "must be an object {family, constant, value, version, type}"), []);
    const constant = stringField(item, "constant");
    const common = keyCommon(item, `${entry} (${String(item.family)}.${constant || String(item.value)})`, knownTypes, report);
    if (!IDENTIFIER.test(constant)) report(common.label, "constant must be a non-empty identifier");
    unique(constants, `${common.family}.${constant}`, common.label, "duplicate constant name in its family", report);
    const id = `${namespace}.${common.value}@v${common.version}`;
    unique(ids, id, common.label, `duplicate id "${id}"`, report);
    return [{ family: common.family, constant, value: common.value, version: common.version, type: common.type, id, ...doc(item) }];
  });
}

function keyFamilyList(raw: Raw, namespace: string, knownTypes: Set<string>, ids: Map<string, string>, report: Report): KeyFamilySpec[] {
  const functions = new Map<string, string>();
  return arrayField(raw, "keyFamilies", report).flatMap((item, index) => {
    const entry = `keyFamilies[${index}]`;
    if (!isObject(item)) return (report(entry, "must be an object {function, family, value, version, type}"), []);
    const fn = stringField(item, "function");
    const common = keyCommon(item, `${entry} (${fn || String(item.value)})`, knownTypes, report);
    if (!IDENTIFIER.test(fn)) report(common.label, "function must be a non-empty identifier");
    unique(functions, fn, common.label, "duplicate function name", report);
    const prefix = `${namespace}.${common.value}`;
    unique(ids, `${prefix}.*@v${common.version}`, common.label, `duplicate id "${prefix}.<suffix>@v${common.version}"`, report);
    return [{ function: fn, family: common.family, value: common.value, version: common.version, type: common.type, prefix, ...doc(item) }];
  });
}

function keyCommon(item: Raw, label: string, knownTypes: Set<string>, report: Report) {
  const family = stringField(item, "family") as KeyFamilyName;
  const value = stringField(item, "value");
  const type = stringField(item, "type");
  const version = item.version;
  if (!KEY_FAMILY_NAMES.includes(family)) report(label, `family must be one of ${KEY_FAMILY_NAMES.join(", ")}`);
  if (value === "") report(label, "value must be a non-empty string");
  else if (!SNAKE_VALUE.test(value)) report(label, "value must be lowercase snake_case");
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1) report(label, "version must be an integer >= 1");
  if (!knownTypes.has(type)) report(label, `unknown type "${type}" (known: ${[...knownTypes].join(", ")})`);
  return { label, family, value, type, version: typeof version === "number" ? version : 0 };
}

function enumList(raw: Raw, shapes: Shape[], report: Report): EnumSpec[] {
  const constants = new Map<string, string>();
  const typeNames = new Map<string, string>(shapes.map((shape) => [shape.typeName, `shape "${shape.name}"`]));
  return arrayField(raw, "enums", report).flatMap((item, index) => {
    const entry = `enums[${index}]`;
    if (!isObject(item)) return (report(entry, "must be an object {constant, typeName?, values}"), []);
    const constant = stringField(item, "constant");
    const label = `${entry} ("${constant}")`;
    if (!UPPER_CONSTANT.test(constant)) report(label, "constant must be a non-empty UPPER_SNAKE_CASE name");
    unique(constants, constant, label, "duplicate constant name", report);
    const typeName = item.typeName === undefined ? undefined : stringField(item, "typeName");
    if (typeName !== undefined) {
      if (!TYPE_NAME.test(typeName)) report(label, "typeName must be a PascalCase identifier");
      else if (RESERVED_TYPE_NAMES.has(typeName)) report(label, `typeName "${typeName}" is reserved by the generated modules`);
      unique(typeNames, typeName, label, "duplicate type name", report);
    }
    const values = Array.isArray(item.values) ? item.values : [];
    if (values.length === 0) report(label, "values must be a non-empty list");
    values.forEach((value, valueIndex) => {
      if (typeof value !== "string" || value === "") report(`${label} values[${valueIndex}]`, "value must be a non-empty string");
    });
    if (new Set(values).size !== values.length) report(label, "values must be unique");
    return [{ constant, ...(typeName ? { typeName } : {}), values: values.map(String) }];
  });
}

function unique(seen: Map<string, string>, name: string, label: string, rule: string, report: Report): void {
  if (name === "") return;
  const first = seen.get(name);
  if (first !== undefined) report(label, `${rule} (first declared at ${first})`);
  else seen.set(name, label);
}

function arrayField(raw: Raw, field: string, report: Report): unknown[] {
  const value = raw[field];
  if (value === undefined) return [];
  if (!Array.isArray(value)) return (report(field, "must be a list"), []);
  return value;
}

function stringField(item: Raw, field: string): string {
  return typeof item[field] === "string" ? (item[field] as string) : "";
}

function doc(item: Raw): { doc?: string } {
  return typeof item.doc === "string" ? { doc: item.doc } : {};
}

function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
