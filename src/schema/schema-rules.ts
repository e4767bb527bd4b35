import { linearPatternProblem } from "./linear-regexp.js";
import { SCHEMA_LIMITS } from "./limits.js";

/** Keywords whose value is one schema (or, for `items`, a list of schemas). */
const SCHEMA_KEYWORDS = new Set([
  "additionalProperties",
  "items",
  "additionalItems",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "unevaluatedProperties",
  "unevaluatedItems",
]);
const SCHEMA_LIST_KEYWORDS = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
/** Keywords whose value maps names to schemas (`dependencies` may also map to lists of names). */
const SCHEMA_MAP_KEYWORDS = new Set(["properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"]);
/** Keywords that would make validation asynchronous, data-driven, remote, or scoped in ways we cannot bound. */
const REFUSED_KEYWORDS: Record<string, string> = {
  $async: "asynchronous schemas are not supported (a tool's arguments are checked synchronously)",
  $data: "$data references are not supported",
  $dynamicRef: "only local references (#/...) are supported",
  $recursiveRef: "only local references (#/...) are supported",
  $anchor: "anchors are not supported; refer to definitions with #/...",
  $dynamicAnchor: "anchors are not supported; refer to definitions with #/...",
  $recursiveAnchor: "anchors are not supported; refer to definitions with #/...",
};

type JsonNode = null | boolean | number | string | JsonNode[] | { [key: string]: JsonNode };

const pointerPart = (key: string) => key.replace(/~/g, "~0").replace(/\//g, "~1");

/** The value a local `#/...` reference names, or undefined when it names nothing. */
function resolvePointer(root: JsonNode, ref: string): JsonNode | undefined {
  let node: JsonNode | undefined = root;
  for (const raw of ref.slice(2).split("/")) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    } catch {
      return undefined;
    }
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, JsonNode>)[key];
  }
  return node;
}

/** Depth of nested objects and arrays, walked without recursion so a deep value cannot overflow the stack. */
function jsonDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    deepest = Math.max(deepest, depth);
    if (deepest > limit) return deepest;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

class SchemaWalk {
  problem: { path: string; message: string } | undefined;

  constructor(private readonly root: JsonNode) {}

  private refuse(path: string, message: string): void {
    this.problem ??= { path, message };
  }

  schema(node: JsonNode, path: string): void {
    if (this.problem !== undefined || typeof node === "boolean") return;
    if (node === null || typeof node !== "object" || Array.isArray(node)) return this.refuse(path, "a schema must be an object");
    for (const [keyword, value] of Object.entries(node)) {
      const at = `${path}/${pointerPart(keyword)}`;
      const refused = REFUSED_KEYWORDS[keyword];
      if (refused !== undefined) return this.refuse(at, refused);
      const isDataRef = value !== null && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, "$data");
      if (isDataRef && !SCHEMA_MAP_KEYWORDS.has(keyword)) {
        return this.refuse(at, REFUSED_KEYWORDS.$data!);
      }
      this.keyword(keyword, value, at, path === "#");
    }
  }

  private keyword(keyword: string, value: JsonNode, at: string, isRoot: boolean): void {
    if (keyword === "$ref") return this.ref(value, at);
    if ((keyword === "$id" || keyword === "$schema") && !isRoot)
      return this.refuse(at, `${keyword} is allowed only at the top of the schema`);
    if (keyword === "pattern" && typeof value === "string") return this.pattern(value, at);
    if (SCHEMA_KEYWORDS.has(keyword)) {
      if (Array.isArray(value)) return value.forEach((item, index) => this.schema(item, `${at}/${index}`));
      return this.schema(value, at);
    }
    if (SCHEMA_LIST_KEYWORDS.has(keyword) && Array.isArray(value)) {
      return value.forEach((item, index) => this.schema(item, `${at}/${index}`));
    }
    if (SCHEMA_MAP_KEYWORDS.has(keyword) && value !== null && typeof value === "object" && !Array.isArray(value)) {
      for (const [name, sub] of Object.entries(value)) {
        const subAt = `${at}/${pointerPart(name)}`;
        if (keyword === "patternProperties") this.pattern(name, subAt);
        if (!(keyword === "dependencies" && Array.isArray(sub))) this.schema(sub, subAt);
      }
    }
    // Anything else is data (enum, const, default, examples) or a plain annotation: ajv never runs it.
  }

  private ref(value: JsonNode, at: string): void {
    if (typeof value !== "string" || !(value === "#" || value.startsWith("#/"))) {
      return this.refuse(at, `only local references (# or #/...) are supported, got ${JSON.stringify(value).slice(0, 80)}`);
    }
    if (value !== "#" && resolvePointer(this.root, value) === undefined) this.refuse(at, `${value} names nothing in this schema`);
  }

  private pattern(pattern: string, at: string): void {
    const problem = linearPatternProblem(pattern);
    if (problem !== undefined) this.refuse(at, `the pattern ${JSON.stringify(pattern).slice(0, 80)} ${problem}`);
  }
}

/**
 * Why a tool's `parameters` (its JSON text and parsed value) breaks the rules, naming the schema path
 * (`#/properties/code/pattern`), or undefined when it keeps them.
 */
export function schemaRuleProblem(text: string, schema: unknown): string | undefined {
  const bytes = Buffer.byteLength(text);
  if (bytes > SCHEMA_LIMITS.maxSchemaBytes) {
    return `is ${bytes} bytes of JSON, over the ${SCHEMA_LIMITS.maxSchemaBytes}-byte limit`;
  }
  if (jsonDepth(schema, SCHEMA_LIMITS.maxSchemaDepth) > SCHEMA_LIMITS.maxSchemaDepth) {
    return `nests deeper than ${SCHEMA_LIMITS.maxSchemaDepth} levels`;
  }
  const walk = new SchemaWalk(schema as JsonNode);
  walk.schema(schema as JsonNode, "#");
  return walk.problem === undefined ? undefined : `at ${walk.problem.path}: ${walk.problem.message}`;
}
