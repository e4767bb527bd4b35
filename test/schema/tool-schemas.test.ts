import { describe, expect, it } from "vitest";
import { ToolSchemas } from "../../src/schema/tool-schemas.js";

/* The schema rules refuse what cannot be bounded and nothing else: ordinary schemas load and check as before. */
describe("ToolSchemas", () => {
  const schemas = new ToolSchemas();

  it.each([
    [
      "refs to definitions and $defs",
      {
        type: "object",
        definitions: { id: { type: "string" } },
        $defs: { n: { type: "number" } },
        properties: { a: { $ref: "#/definitions/id" }, b: { $ref: "#/$defs/n" } },
      },
    ],
    [
      "a top-level $id and draft-07 $schema",
      { $schema: "http://json-schema.org/draft-07/schema#", $id: "https://schemas.example/t", type: "object" },
    ],
    ["properties named like refused keywords", { type: "object", properties: { $data: { type: "string" }, $async: { type: "string" } } }],
    [
      "refused keywords inside data",
      { type: "object", enum: [{ $async: true, $data: "x" }], default: { $ref: "https://x" }, examples: [{ $id: "y" }] },
    ],
    [
      "dependencies, tuples, combinators, format",
      {
        type: "object",
        dependencies: { a: ["b"], c: { required: ["d"] } },
        properties: {
          t: { type: "array", items: [{ type: "string" }, { type: "number" }] },
          e: { anyOf: [{ type: "string", format: "email" }, { not: { type: "null" } }] },
        },
      },
    ],
  ])("accepts %s", (_label, schema) => {
    expect(schemas.problem(schema)).toBeUndefined();
  });

  it("patterns search anywhere, as JavaScript's do, and understand JavaScript syntax", () => {
    const schema = {
      type: "object",
      properties: { a: { type: "string", pattern: "b+" }, n: { type: "string", pattern: "^(?<word>\\p{L}+)\\u0021$" } },
    };
    expect(schemas.problem(schema)).toBeUndefined();
    expect(schemas.check(schema, { a: "abbbc" })).toEqual({ valid: true });
    expect(schemas.check(schema, { a: "ac" }).valid).toBe(false);
    expect(schemas.check(schema, { n: "héllo!" })).toEqual({ valid: true });
    expect(schemas.check(schema, { n: "hello" }).valid).toBe(false);
  });

  it("uniqueItems compares JSON values, key order aside", () => {
    const schema = { type: "object", properties: { l: { type: "array", uniqueItems: true } } };
    expect(
      schemas.check(schema, {
        l: [
          { a: 1, b: [1, { x: 1, y: 2 }] },
          { b: [1, { y: 2, x: 1 }], a: 1 },
        ],
      }).valid,
    ).toBe(false);
    expect(schemas.check(schema, { l: [1, "1", [1], { "1": 1 }, null] })).toEqual({ valid: true });
  });

  it("each owner's schemas are its own: the same $id compiles differently in two instances", () => {
    const other = new ToolSchemas();
    const one = { $id: "https://schemas.example/same", type: "object", required: ["a"] };
    const two = { $id: "https://schemas.example/same", type: "object", required: ["b"] };
    expect(schemas.check(one, { a: 1 })).toEqual({ valid: true });
    expect(other.check(two, { b: 1 })).toEqual({ valid: true });
    expect(other.check(two, { a: 1 }).valid).toBe(false);
  });
});

describe("ToolSchemas: the meta-schema check shared by every owner", () => {
  it("a schema is checked against the meta-schema before it is compiled, even when check() meets it first", () => {
    const schema = { type: "object", properties: { a: { minimum: "3" } } };
    const outcome = new ToolSchemas().check(schema, { a: 1 });
    expect(outcome.valid).toBe(false);
    expect(outcome).toMatchObject({ problem: expect.stringContaining("is not a valid JSON Schema") });
  });

  it("one owner's invalid schema does not change what another owner's check reports", () => {
    const bad = new ToolSchemas();
    expect(bad.problem({ type: "object", required: "a" })).toMatch(/^is not a valid JSON Schema: \/required/);
    const good = new ToolSchemas();
    expect(good.problem({ type: "object", required: ["a"] })).toBeUndefined();
    expect(good.check({ type: "object", required: ["a"] }, {}).valid).toBe(false);
  });
});
