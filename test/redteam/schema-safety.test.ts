import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ScriptedStep } from "../../src/engine/scripted.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { harness, ofType, writeScripts } from "../helpers/harness.js";
import { rejection } from "../sandbox/helpers.js";
import { MAX_STALL_MS, MAX_WALL_STALL_MS, measureStall } from "./stall.js";

/*
 * Red team: a tenant's tool schemas against the host. Each case is a real script in the real sandbox,
 * loaded by a real tenant runtime, its tool called by a scripted model through the real loop, in this
 * process (the host), whose event-loop stall is measured.
 */
const pool = createSandboxPool({ workers: 1 });
afterAll(() => pool.close());
let tenants = 0;

/** A script whose one tool `probe` has `parameters` and echoes its args' size. */
function toolScript(parameters: unknown, name = "probe"): string {
  return `import { defineScript } from "hookbox";
export default defineScript({ tools: [{ name: ${JSON.stringify(name)}, description: "", parameters: ${JSON.stringify(parameters)},
  handler(args) { return { ok: true, keys: Object.keys(args) }; } }] });\n`;
}

const callsOf = (...calls: Record<string, unknown>[]): ScriptedStep[] => [
  { toolCalls: calls.map((args, i) => ({ id: `c${i + 1}`, name: "probe", args })) as never },
  { text: "done" },
];

async function attackRun(attack: string, source: string, steps: ScriptedStep[], tenant = `schema-attacker-${++tenants}`) {
  const { value, busyStallMs, stallMs } = await measureStall(attack, async () => {
    const h = await harness({ steps, pool, tenant, scripts: writeScripts({ "attack.ts": source }) });
    return h.run();
  });
  expect(busyStallMs).toBeLessThan(MAX_STALL_MS);
  expect(stallMs).toBeLessThan(MAX_WALL_STALL_MS);
  expect(value.result.status).toBe("completed");
  // Calls of one inference run concurrently: put their results back in call order.
  return ofType(value.events, "tool-finished").sort((a, b) => a.callId.localeCompare(b.callId));
}

async function refusedAtLoad(attack: string, source: string, mentions: string[]) {
  const { value: error, busyStallMs } = await measureStall(attack, () =>
    rejection(
      harness({ steps: [{ text: "never" }], pool, tenant: `schema-attacker-${++tenants}`, scripts: writeScripts({ "attack.ts": source }) }),
    ),
  );
  expect(error.code).toBe("SCRIPT_LOAD");
  for (const text of mentions) expect(error.message).toContain(text);
  expect(busyStallMs).toBeLessThan(MAX_STALL_MS);
  return error;
}

describe("red team: tool schemas", () => {
  // The host's first run loads code lazily (the loop's modules, ajv's code paths): start-up, not an attack.
  beforeAll(async () => {
    const schema = {
      type: "object",
      properties: { code: { type: "string", pattern: "^a+$" }, list: { type: "array", uniqueItems: true } },
    };
    const warm = await harness({
      steps: callsOf({ code: "aa", list: [1, 2] }),
      pool,
      tenant: "warmup",
      scripts: writeScripts({ "warm.ts": toolScript(schema) }),
    });
    await warm.run();
  });

  it("a catastrophic-backtracking pattern runs in linear time on a 40-character string", async () => {
    const schema = { type: "object", properties: { code: { type: "string", pattern: "^(a+)+$" } }, required: ["code"] };
    const finished = await attackRun(
      "pattern ^(a+)+$ on 40 chars + '!'",
      toolScript(schema),
      callsOf({ code: "a".repeat(40) + "!" }, { code: "aaaa" }),
    );
    expect(finished[0]!.error).toMatchObject({ code: "TOOL_ARGS" });
    expect(finished[0]!.error!.message).toContain("/code");
    expect(finished[1]!.result).toEqual({ ok: true, keys: ["code"] });
  });

  it("patternProperties run on the same engine", async () => {
    const schema = { type: "object", patternProperties: { "^(x+x+)+y$": { type: "number" } } };
    const finished = await attackRun(
      "patternProperties (x+x+)+y on a 40-char key",
      toolScript(schema),
      callsOf({ ["x".repeat(40)]: "not a number" }, { xxy: "text" }),
    );
    expect(finished[0]!.result).toEqual({ ok: true, keys: ["x".repeat(40)] });
    expect(finished[1]!.error).toMatchObject({ code: "TOOL_ARGS" });
  });

  it("a pattern RE2 cannot express is refused at load, naming the tool and the schema path", async () => {
    await refusedAtLoad(
      "pattern with lookahead",
      toolScript({ type: "object", properties: { code: { type: "string", pattern: "^(?=a)a+$" } } }),
      ["tools[0] (probe)", "#/properties/code/pattern", "RE2"],
    );
  });

  // ajv's own check compares every pair when the items' type is not declared: 40k items were seconds.
  // Numbers keep the rest of the loop's work on these args (the turn's checks) small enough to see ours.
  it("uniqueItems over 40k items is checked in linear time", async () => {
    const items = Array.from({ length: 40_000 }, (_, i) => i);
    const schema = { type: "object", properties: { list: { type: "array", uniqueItems: true } } };
    const finished = await attackRun(
      "uniqueItems over 40k items",
      toolScript(schema),
      callsOf({ list: items }, { list: [...items, 39_999] }),
    );
    expect(finished[0]!.result).toEqual({ ok: true, keys: ["list"] });
    expect(finished[1]!.error).toMatchObject({ code: "TOOL_ARGS" });
  });

  it("a script with 20k tools is refused at load, fast", async () => {
    const source = `import { defineScript } from "hookbox";
export default defineScript({ tools: Array.from({ length: 20000 }, (_, i) => ({ name: "t" + i, description: "", parameters: { type: "object", properties: { a: { type: "string", pattern: "^a+$" } } }, handler() {} })) });\n`;
    await refusedAtLoad("20k tools", source, ["20000 tools is over the limit of 256 per script"]);
  });

  it.each([
    ["$async", { $async: true, type: "object" }, "#/$async"],
    ["nested $async", { type: "object", properties: { a: { $async: true } } }, "#/properties/a/$async"],
    ["$data", { type: "object", properties: { a: { maximum: { $data: "1/b" } } } }, "#/properties/a/maximum"],
    ["remote $ref", { type: "object", properties: { a: { $ref: "https://example.com/schema.json" } } }, "only local references"],
    ["dangling $ref", { type: "object", properties: { a: { $ref: "#/definitions/missing" } } }, "names nothing"],
    ["nested $id", { type: "object", properties: { a: { $id: "urn:x", type: "string" } } }, "#/properties/a/$id"],
    ["deep schema", JSON.parse(`${'{"not":'.repeat(40)}{}${"}".repeat(40)}`), "nests deeper than 32"],
  ])("refuses %s at load", async (label, schema, mentions) => {
    await refusedAtLoad(`schema with ${label}`, toolScript(schema), ["tools[0] (probe)", mentions]);
  });

  it("refuses a schema over 64 KiB before the host parses it", async () => {
    const schema = { type: "object", enum: [{ blob: "x".repeat(70_000) }] };
    await refusedAtLoad("schema of 70 KB", toolScript(schema), ["tools[0].parameters", "65536-byte limit"]);
  });

  it("two tenants using the same $id each get their own schema", async () => {
    const asString = { $id: "https://schemas.example/shared", type: "object", properties: { x: { type: "string" } }, required: ["x"] };
    const asNumber = { $id: "https://schemas.example/shared", type: "object", properties: { x: { type: "number" } }, required: ["x"] };
    const first = await attackRun("$id collision (tenant A)", toolScript(asString), callsOf({ x: "a" }, { x: 1 }));
    const second = await attackRun("$id collision (tenant B)", toolScript(asNumber), callsOf({ x: "a" }, { x: 1 }));
    expect(first.map((f) => f.error?.code ?? "ok")).toEqual(["ok", "TOOL_ARGS"]);
    expect(second.map((f) => f.error?.code ?? "ok")).toEqual(["TOOL_ARGS", "ok"]);
  });

  it("ajv writes nothing of a script's text to the host's output", async () => {
    const marker = `SCRIPT-TEXT-${Math.random().toString(36).slice(2)}`;
    const schema = { type: "object", properties: { a: { type: "string", format: marker, [marker]: { nested: marker } } } };
    const written: string[] = [];
    const capture = (...args: unknown[]) => void written.push(args.map(String).join(" "));
    const spies = [
      vi.spyOn(console, "warn").mockImplementation(capture),
      vi.spyOn(console, "log").mockImplementation(capture),
      vi.spyOn(console, "error").mockImplementation(capture),
      vi.spyOn(process.stderr, "write").mockImplementation((chunk) => (written.push(String(chunk)), true)),
    ];
    try {
      const finished = await attackRun("unknown format and keyword (ajv warnings)", toolScript(schema), callsOf({ a: "anything" }));
      expect(finished[0]!.result).toEqual({ ok: true, keys: ["a"] });
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(written.join("\n")).not.toContain(marker);
  });
});
