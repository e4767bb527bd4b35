import { describe, expect, it } from "vitest";
import { isJson } from "../../src/turns/json.js";

describe("isJson", () => {
  it("accepts what survives a JSON round trip: scalars, arrays, plain and null-prototype objects, nested", () => {
    expect(isJson(null)).toBe(true);
    expect(isJson("text")).toBe(true);
    expect(isJson(3.5)).toBe(true);
    expect(isJson(false)).toBe(true);
    expect(isJson({ a: [1, { b: "c" }], d: {} })).toBe(true);
    expect(isJson(Object.assign(Object.create(null) as object, { a: 1 }))).toBe(true);
    const shared = { x: 1 };
    expect(isJson({ first: shared, second: [shared, shared] })).toBe(true); // shared, not cyclic
  });

  it("refuses what does not: cycles, undefined, functions, NaN and Infinity, class instances, at any depth", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { inner: [cyclic] };
    expect(isJson(cyclic)).toBe(false);
    expect(isJson(undefined)).toBe(false);
    expect(isJson({ a: 1, b: undefined })).toBe(false);
    expect(isJson({ a: { b: [1, () => 2] } })).toBe(false);
    expect(isJson([1, Number.NaN])).toBe(false);
    expect(isJson({ a: [Number.POSITIVE_INFINITY] })).toBe(false);
    expect(isJson({ when: new Date(0) })).toBe(false);
    expect(isJson([new Map()])).toBe(false);
  });

  it("reads own properties only", () => {
    const parent = { bad: () => 1 };
    const child = Object.create(parent) as Record<string, unknown>;
    child.good = 1;
    // A prototype other than Object.prototype or null is refused before its properties are read.
    expect(isJson(child)).toBe(false);
  });
});
