import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { validateSpec, CodegenSpecError } from "../../codegen/validate.js";
import { codegenCommand } from "../../src/cli/commands/codegen.js";
import { capture, realSpec, tempDir } from "./helpers.js";

const FILE = "spec-under-test.json";

function problemsOf(mutate: (spec: Record<string, any>) => void): string[] {
  const spec = realSpec();
  mutate(spec);
  try {
    validateSpec(spec, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(CodegenSpecError);
    expect((error as Error).message.startsWith(`${FILE}: invalid codegen spec`)).toBe(true);
    return (error as CodegenSpecError).problems;
  }
  return [];
}

describe("codegen spec validation", () => {
  it("accepts the project's own spec", () => {
    expect(problemsOf(() => {})).toEqual([]);
  });

  it.each([
    [
      "a duplicate key id",
      (spec: any) => spec.keys.push({ family: "run_metadata", constant: "session", value: "session_id", version: 1, type: "string" }),
      /^keys\[\d+\] \(run_metadata\.session\): duplicate id "hookbox\.session_id@v1" \(first declared at keys\[2\]/,
    ],
    [
      "a duplicate constant name in a family",
      (spec: any) => spec.keys.push({ family: "turn_metadata", constant: "model", value: "model_name", version: 1, type: "string" }),
      /^keys\[\d+\] \(turn_metadata\.model\): duplicate constant name in its family/,
    ],
    [
      "a duplicate block kind constant",
      (spec: any) => spec.blockKinds.push({ constant: "user", value: "human" }),
      /^blockKinds\[\d+\] \("user"\): duplicate constant name/,
    ],
    [
      "a duplicate enum constant",
      (spec: any) => spec.enums.push({ constant: "HOOK_NAMES", values: ["x"] }),
      /^enums\[\d+\] \("HOOK_NAMES"\): duplicate constant name/,
    ],
    [
      "a block kind payload that is not an object shape",
      (spec: any) => (spec.blockKinds[0].payload = "toolOrigin"),
      /^blockKinds\[0\] \("user"\): payload must name an object shape \(got "toolOrigin"\)/,
    ],
    [
      "a block kind payload naming no shape",
      (spec: any) => (spec.blockKinds[5].payload = "nothingHere"),
      /^blockKinds\[5\] \("reasoning"\): payload must name an object shape \(got "nothingHere"\)/,
    ],
    ["an empty namespace", (spec: any) => (spec.namespace = ""), /^namespace: namespace must be a non-empty string/],
    [
      "an empty key value",
      (spec: any) => (spec.keys[0].value = ""),
      /^keys\[0\] \(turn_data\.toolConfig\): value must be a non-empty string/,
    ],
    [
      "an empty block kind value",
      (spec: any) => (spec.blockKinds[1].value = ""),
      /^blockKinds\[1\] \("llmText"\): value must be a non-empty string/,
    ],
    [
      "an empty enum value",
      (spec: any) => spec.enums[0].values.push(""),
      /^enums\[0\] \("HOOK_NAMES"\) values\[\d+\]: value must be a non-empty string/,
    ],
    [
      "a version of 0",
      (spec: any) => (spec.keys[3].version = 0),
      /^keys\[3\] \(turn_metadata\.inferenceId\): version must be an integer >= 1/,
    ],
    [
      "a fractional version",
      (spec: any) => (spec.keyFamilies[0].version = 1.5),
      /^keyFamilies\[0\] \(contextRestartDisabledKey\): version must be an integer >= 1/,
    ],
    ["an unknown key type", (spec: any) => (spec.keys[4].type = "uuid"), /^keys\[4\] \(turn_metadata\.traceId\): unknown type "uuid"/],
    [
      "an unknown field type in a shape",
      (spec: any) => (spec.shapes[0].fields.inputTokens.type = "bigint"),
      /^shapes\[0\] \("usage"\) field "inputTokens": unknown type "bigint"/,
    ],
  ])("rejects %s, naming the entry and the rule", (_label, mutate, expected) => {
    const problems = problemsOf(mutate);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(expected);
  });

  it("reports every problem at once", () => {
    const problems = problemsOf((spec) => {
      spec.namespace = "";
      spec.keys[0].version = -1;
      spec.keys[1].type = "nope";
    });
    expect(problems).toHaveLength(3);
  });

  it("writes nothing when the spec is invalid, and exits 2 naming the file", async () => {
    const dir = tempDir();
    const specFile = join(dir, "bad-spec.json");
    const spec = realSpec();
    spec.keys[2].version = 0;
    writeFileSync(specFile, JSON.stringify(spec));
    const out = join(dir, "out");
    const result = await capture(() => codegenCommand(["--spec", specFile, "--out", out]));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("bad-spec.json: invalid codegen spec (1 problem)");
    expect(result.stderr).toContain("keys[2] (turn_metadata.sessionId): version must be an integer >= 1");
    expect(readdirSync(dir)).toEqual(["bad-spec.json"]);
  });

  it("names the file when the spec is not JSON", async () => {
    const dir = tempDir();
    const specFile = join(dir, "broken.json");
    writeFileSync(specFile, "{ namespace: ");
    const result = await capture(() => codegenCommand(["--spec", specFile, "--out", join(dir, "out")]));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/broken\.json: not valid JSON/);
  });
});
