import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { codegenCommand } from "../../src/cli/commands/codegen.js";
import { GENERATED_FILES } from "../../codegen/generate.js";
import { capture, root, tempDir } from "./helpers.js";

describe("hookbox codegen --check", () => {
  it("passes on the committed generated files", async () => {
    const result = await capture(() => codegenCommand(["--check"]));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });

  it("regenerates byte-identical files", async () => {
    const out = tempDir();
    const result = await capture(() => codegenCommand(["--out", out]));
    expect(result.code).toBe(0);
    for (const path of Object.values(GENERATED_FILES)) {
      expect(readFileSync(join(out, path), "utf8"), path).toBe(readFileSync(join(root, path), "utf8"));
    }
  });

  it("fails naming each hand-edited or missing file", async () => {
    const out = tempDir();
    await capture(() => codegenCommand(["--out", out]));
    appendFileSync(join(out, GENERATED_FILES.hostKeys), "export const EDITED = 1;\n");
    appendFileSync(join(out, GENERATED_FILES.turnsDts), "// tweak\n");
    const result = await capture(() => codegenCommand(["--check", "--out", out]));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${GENERATED_FILES.hostKeys} is stale`);
    expect(result.stderr).toContain(`${GENERATED_FILES.turnsDts} is stale`);
    expect(result.stderr).not.toContain(GENERATED_FILES.runtimeConstants);

    const empty = tempDir();
    const missing = await capture(() => codegenCommand(["--check", "--out", empty]));
    expect(missing.code).toBe(1);
    expect(missing.stderr.split("\n").filter((line) => line.includes("is stale"))).toHaveLength(3);
  });

  it("rejects an unknown argument with exit 2", async () => {
    const result = await capture(() => codegenCommand(["--frobnicate"]));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unexpected argument "--frobnicate"');
  });
});
