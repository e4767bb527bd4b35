import type { PrimitiveType, Shape, Spec } from "./spec.js";

/*
 * The spec's small value-type language rendered three ways: a zod schema (host), a TypeScript type (.d.ts),
 * and a plain descriptor the in-sandbox runtime checks values against (no zod inside the isolate).
 */

const PRIMITIVE_ZOD: Record<PrimitiveType, string> = {
  string: "z.string()",
  number: "z.number()",
  integer: "z.number().int()",
  boolean: "z.boolean()",
  "string-list": "z.array(z.string())",
  json: "JsonSchema",
  "json-object": "JsonObjectSchema",
};

const PRIMITIVE_TS: Record<PrimitiveType, string> = {
  string: "string",
  number: "number",
  integer: "number",
  boolean: "boolean",
  "string-list": "string[]",
  json: "Json",
  "json-object": "JsonObject",
};

export function isPrimitive(type: string): type is PrimitiveType {
  return Object.hasOwn(PRIMITIVE_ZOD, type);
}

function shapeNamed(spec: Spec, name: string): Shape {
  const shape = spec.shapes.find((candidate) => candidate.name === name);
  if (!shape) throw new Error(`codegen: unknown type "${name}" survived validation`);
  return shape;
}

/** The zod expression for a type: a primitive inline, a shape by its exported schema constant. */
export function zodFor(spec: Spec, type: string): string {
  return isPrimitive(type) ? PRIMITIVE_ZOD[type] : `${shapeNamed(spec, type).typeName}Schema`;
}

/** The TypeScript type for a type: a primitive inline, a shape by its exported type name. */
export function tsFor(spec: Spec, type: string): string {
  return isPrimitive(type) ? PRIMITIVE_TS[type] : shapeNamed(spec, type).typeName;
}

export function shapeZod(spec: Spec, shape: Shape): string {
  switch (shape.kind) {
    case "enum":
      return `z.enum([${shape.values.map(quote).join(", ")}])`;
    case "list":
      return `z.array(${zodFor(spec, shape.items)})`;
    case "object": {
      const fields = Object.entries(shape.fields).map(
        ([name, field]) => `  ${name}: ${zodFor(spec, field.type)}${field.optional ? ".optional()" : ""},`,
      );
      const body = `{\n${fields.join("\n")}\n}`;
      // Unknown fields are refused unless the shape keeps extras: a typo must not vanish silently.
      return shape.extraJson ? `z.object(${body}).catchall(JsonSchema)` : `z.strictObject(${body})`;
    }
  }
}

export function shapeTs(spec: Spec, shape: Shape): string {
  switch (shape.kind) {
    case "enum":
      return shape.values.map(quote).join(" | ");
    case "list":
      return `${tsFor(spec, shape.items)}[]`;
    case "object": {
      const fields = Object.entries(shape.fields).map(
        ([name, field]) => `  ${name}${field.optional ? "?" : ""}: ${tsFor(spec, field.type)};`,
      );
      if (shape.extraJson) fields.push("  [field: string]: Json | undefined;");
      return `{\n${fields.join("\n")}\n}`;
    }
  }
}

/** The runtime descriptor of every type, primitives included, keyed by type name. */
export function valueTypeTable(spec: Spec): Record<string, unknown> {
  const table: Record<string, unknown> = {
    string: { kind: "string" },
    number: { kind: "number" },
    integer: { kind: "integer" },
    boolean: { kind: "boolean" },
    "string-list": { kind: "list", items: "string" },
    json: { kind: "json" },
    "json-object": { kind: "json-object" },
  };
  for (const shape of spec.shapes) {
    table[shape.name] =
      shape.kind === "enum"
        ? { kind: "enum", values: shape.values }
        : shape.kind === "list"
          ? { kind: "list", items: shape.items }
          : { kind: "object", fields: shape.fields, extra: shape.extraJson };
  }
  return table;
}

export function quote(value: string): string {
  return JSON.stringify(value);
}
