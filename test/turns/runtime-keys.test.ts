import { describe, expect, it } from "vitest";
import {
  contextRestartDisabledKey as runtimeFlagKey,
  getKey,
  setKey,
  deleteKey,
  valueProblem,
  valueTypeTable,
} from "../../runtime/keys.js";
import { keys as runtimeKeys, makeValueTypes } from "../../runtime/constants.gen.js";
import * as host from "../../src/turns/keys.gen.js";
import type { TypedKey } from "../../src/turns/typed-key.js";
import type { Json } from "../../src/turns/json.js";

/** Candidate values; every key is tried with every one, so each type sees accepted and refused values. */
const SAMPLES: unknown[] = [
  "text",
  "",
  0,
  3,
  2.5,
  -1,
  true,
  false,
  null,
  [],
  ["a", "b"],
  [1],
  {},
  { a: 1 },
  { inputTokens: 1 },
  { inputTokens: 1.5 },
  { inputTokens: 1, extra: 2 },
  { totalTokens: "3" },
  { originalUserRequest: "r", timestampMs: 1 },
  { originalUserRequest: "r", timestampMs: 1, ticket: { n: 1 } },
  { originalUserRequest: "r" },
  { originalUserRequest: "r", timestampMs: 1, userId: 7 },
  { enabled: true, allowedTools: ["a"] },
  { maxIterations: 2.5 },
  { allowedTools: [1] },
  { custom: "x" },
  "host",
  "script",
  "guest",
  [{ name: "t", description: "d", parameters: {} }],
  [{ name: "t", description: "d", parameters: {}, origin: "host" }],
  [{ name: "t", description: "d" }],
  [{ name: "t", description: "d", parameters: {}, more: 1 }],
  [{ name: "t", description: "d", parameters: [] }],
  Number.NaN,
  Number.POSITIVE_INFINITY,
  () => 1,
  new Date(0),
  { nested: undefined },
  { value: [undefined] },
  cyclic(),
];

const hostGroups = {
  turnData: host.TurnDataKeys,
  turnMetadata: host.TurnMetadataKeys,
  blockMetadata: host.BlockMetadataKeys,
  runMetadata: host.RunMetadataKeys,
};

describe("typed keys inside the sandbox (runtime/keys.ts)", () => {
  it("accepts and refuses exactly what the host's zod schemas accept and refuse, for every key", () => {
    const disagreements: string[] = [];
    let accepted = 0;
    for (const [group, hostKeys] of Object.entries(hostGroups)) {
      for (const [name, hostKey] of Object.entries(hostKeys as Record<string, TypedKey<Json>>)) {
        const runtimeKey = (runtimeKeys as Record<string, Record<string, { id: string; type: string; family: string }>>)[group]![name]!;
        for (const sample of SAMPLES) {
          let hostAccepts = true;
          try {
            hostKey.set({}, sample as Json);
          } catch {
            hostAccepts = false;
          }
          const runtimeAccepts = valueProblem(sample, runtimeKey.type) === undefined;
          if (hostAccepts) accepted++;
          if (hostAccepts !== runtimeAccepts)
            disagreements.push(`${runtimeKey.id} ${String(JSON.stringify(sample))}: host ${hostAccepts}, runtime ${runtimeAccepts}`);
        }
      }
    }
    expect(disagreements).toEqual([]);
    expect(accepted).toBeGreaterThan(20);
  });

  it("returns undefined for a missing key and the value for a present one", () => {
    const bag: Record<string, unknown> = {};
    expect(getKey(bag, runtimeKeys.turnMetadata.model)).toBeUndefined();
    setKey(bag, runtimeKeys.turnMetadata.model, "m1");
    expect(bag).toEqual({ "hookbox.model@v1": "m1" });
    expect(getKey(bag, runtimeKeys.turnMetadata.model)).toBe("m1");
    deleteKey(bag, runtimeKeys.turnMetadata.model);
    expect(bag).toEqual({});
  });

  it("refuses a wrong value naming the key and the path, storing nothing", () => {
    const bag: Record<string, unknown> = { keep: 1 };
    expect(() => setKey(bag, runtimeKeys.turnMetadata.model, 42)).toThrow("hookbox.model@v1: refused: $: expected string, got number");
    expect(() => setKey(bag, runtimeKeys.turnData.toolDefinitions, [{ name: "t", description: "d", parameters: 1 }])).toThrow(
      "hookbox.tool_definitions@v1: refused: $[0].parameters: expected object, got number",
    );
    expect(() => setKey(bag, runtimeKeys.turnMetadata.usage, { inputTokens: 1, cost: 2 })).toThrow("$.cost: unknown field");
    expect(bag).toEqual({ keep: 1 });
  });

  it("throws naming the key when a stored value breaks its type", () => {
    expect(() => getKey({ "hookbox.tool_calls@v1": "three" }, runtimeKeys.blockMetadata.toolCalls)).toThrow(
      /^hookbox\.tool_calls@v1: stored value does not match its type "integer"/,
    );
  });

  it("rejects a bag or key that is not one", () => {
    expect(() => getKey(null as never, runtimeKeys.turnMetadata.model)).toThrow(/getKey: the bag must be an object/);
    expect(() => setKey({}, "hookbox.model@v1" as never, "x")).toThrow(/setKey: the key must be one of hookbox's keys/);
  });

  it("builds flag-family keys with the same ids as the host", () => {
    expect(runtimeFlagKey("docs")).toEqual({ id: host.contextRestartDisabledKey("docs").id, family: "turn_data", type: "boolean" });
    expect(() => runtimeFlagKey("")).toThrow(/suffix/);
  });

  it("exposes frozen constants", () => {
    expect(Object.isFrozen(runtimeKeys)).toBe(true);
    expect(Object.isFrozen(runtimeKeys.turnMetadata.model)).toBe(true);
  });

  it("checks against the generated value-type table, made once and frozen all the way down", () => {
    const table = valueTypeTable();
    expect(table).toEqual(makeValueTypes());
    expect(valueTypeTable()).toBe(table);
    const objects: object[] = [];
    const walk = (value: unknown): void => {
      if (typeof value !== "object" || value === null) return;
      objects.push(value);
      for (const inner of Object.values(value)) walk(inner);
    };
    walk(table);
    // Each type, each object type's fields and field descriptors, each enum's values: all frozen.
    expect(objects.length).toBeGreaterThan(100);
    expect(objects.filter((value) => !Object.isFrozen(value))).toEqual([]);
  });
});

function cyclic(): unknown {
  const value: Record<string, unknown> = { originalUserRequest: "r", timestampMs: 1 };
  value.self = value;
  return value;
}
