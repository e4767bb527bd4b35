import fc from "fast-check";

/*
 * fast-check arbitraries from JSON Schema 2020-12 (the dialect of an OpenAPI 3.1 document): values that the
 * schema describes, as far as its keywords say. Covers what zod's z.toJSONSchema emits: $ref into the
 * document's components, type (or a list of types), properties / required / additionalProperties, items and
 * prefixItems, string length, pattern and format, number bounds, enum / const, anyOf / oneOf / allOf.
 */

export type JsonSchemaNode = boolean | { [keyword: string]: unknown };

export interface SchemaContext {
  /** Resolves `#/components/schemas/Name`. */
  components: Record<string, JsonSchemaNode>;
}

/** How deep `$ref`s may recurse before a recursive schema gives its simplest value. */
const MAX_DEPTH = 4;

export function arbitraryFor(schema: JsonSchemaNode, context: SchemaContext, depth = 0): fc.Arbitrary<unknown> {
  if (schema === true || (typeof schema === "object" && Object.keys(schema).filter((k) => k !== "description").length === 0))
    return fc.jsonValue({ maxDepth: 2 });
  if (schema === false) return fc.constant(undefined);
  const node = schema as Record<string, any>;
  if (typeof node.$ref === "string") {
    const name = node.$ref.replace("#/components/schemas/", "");
    const target = context.components[name];
    if (target === undefined) throw new Error(`unresolved $ref ${node.$ref}`);
    if (depth >= MAX_DEPTH) return fc.constant(null);
    return arbitraryFor(target, context, depth + 1);
  }
  if ("const" in node) return fc.constant(node.const);
  if (Array.isArray(node.enum)) return fc.constantFrom(...node.enum);
  for (const keyword of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(node[keyword]))
      return fc.oneof(...node[keyword].map((option: JsonSchemaNode) => arbitraryFor(option, context, depth + 1)));
  }
  if (Array.isArray(node.allOf)) return arbitraryFor(Object.assign({}, ...node.allOf), context, depth + 1);
  const type = Array.isArray(node.type) ? node.type : node.type === undefined ? undefined : [node.type];
  if (type && type.length > 1) return fc.oneof(...type.map((one: string) => arbitraryFor({ ...node, type: one }, context, depth)));
  switch (type?.[0]) {
    case "string":
      return stringFor(node);
    case "integer": {
      const { min, max } = bounds(node, 1);
      return fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) });
    }
    case "number": {
      const { min, max } = bounds(node, Number.EPSILON);
      return fc.double({ min, max, noNaN: true });
    }
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return arrayFor(node, context, depth);
    case "object":
    case undefined:
      return objectFor(node, context, depth);
    default:
      throw new Error(`unsupported type ${JSON.stringify(node.type)}`);
  }
}

/** A number keyword's bounds (exclusive ones moved in by `step`); ±1e6 where the schema has none. */
function bounds(node: Record<string, any>, step: number): { min: number; max: number } {
  const min = node.minimum ?? (node.exclusiveMinimum !== undefined ? node.exclusiveMinimum + step : -1e6);
  const max = node.maximum ?? (node.exclusiveMaximum !== undefined ? node.exclusiveMaximum - step : 1e6);
  return { min: Math.max(min, -1e15), max: Math.min(max, 1e15) };
}

function stringFor(node: Record<string, any>): fc.Arbitrary<string> {
  if (node.format === "date-time") return fc.date({ noInvalidDate: true }).map((date) => date.toISOString());
  if (typeof node.pattern === "string") return fc.stringMatching(new RegExp(node.pattern));
  return fc.string({ minLength: node.minLength ?? 0, maxLength: Math.min(node.maxLength ?? 40, 200) });
}

function arrayFor(node: Record<string, any>, context: SchemaContext, depth: number): fc.Arbitrary<unknown[]> {
  if (Array.isArray(node.prefixItems))
    return fc.tuple(...node.prefixItems.map((item: JsonSchemaNode) => arbitraryFor(item, context, depth + 1)));
  const items = node.items === undefined ? fc.jsonValue({ maxDepth: 1 }) : arbitraryFor(node.items, context, depth + 1);
  return fc.array(items, { minLength: node.minItems ?? 0, maxLength: Math.min(node.maxItems ?? 4, 4) });
}

function objectFor(node: Record<string, any>, context: SchemaContext, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (node.properties ?? {}) as Record<string, JsonSchemaNode>;
  const required = new Set<string>(node.required ?? []);
  const known = fc.record(
    Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, arbitraryFor(property, context, depth + 1)])),
    { requiredKeys: [...required].filter((name) => name in properties) },
  );
  const extra = node.additionalProperties;
  if (extra === false || extra === undefined) return known;
  const values = extra === true ? fc.jsonValue({ maxDepth: 1 }) : arbitraryFor(extra as JsonSchemaNode, context, depth + 1);
  const keys = node.propertyNames
    ? (arbitraryFor(node.propertyNames as JsonSchemaNode, context, depth + 1) as fc.Arbitrary<string>)
    : fc.string({ maxLength: 12 });
  return fc.tuple(known, fc.dictionary(keys, values, { maxKeys: 3 })).map(([fixed, more]) => ({ ...more, ...fixed }));
}
