import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { initCommand } from "../../src/cli/commands/init.js";
import { checkCommand } from "../../src/cli/commands/check.js";
import { capture, root, tempDir } from "../codegen/helpers.js";

const tsc = join(root, "node_modules/.bin/tsc");

function tscNoEmit(dir: string): { code: number; output: string } {
  try {
    return { code: 0, output: execFileSync(tsc, ["--noEmit", "-p", dir], { encoding: "utf8" }) };
  } catch (error) {
    const failed = error as { status: number; stdout: string };
    return { code: failed.status, output: failed.stdout };
  }
}

describe("hookbox init", () => {
  it("creates a project that tsc --noEmit and hookbox check accept as it is", async () => {
    const dir = join(tempDir("hookbox-init-"), "project");
    const created = await capture(() => initCommand([dir]));
    expect(created.code).toBe(0);
    for (const file of ["tsconfig.json", "types/hookbox.d.ts", "types/turns.d.ts", "policy.ts", "model.json"]) {
      expect(created.stdout).toContain(file);
    }
    expect(readFileSync(join(dir, "types/turns.d.ts"), "utf8")).toBe(readFileSync(join(root, "types/turns.d.ts"), "utf8"));
    const model = JSON.parse(readFileSync(join(dir, "model.json"), "utf8"));
    expect(model.steps[0].toolCalls[0]).toEqual({ id: "c1", name: "lookup_order", args: { id: "A17" } });

    expect(tscNoEmit(dir)).toEqual({ code: 0, output: "" });
    const checked = await capture(() => checkCommand([join(dir, "policy.ts")]));
    expect(checked.stdout).toBe("");
    expect(checked.code).toBe(0);
  });

  it("gives the editor's compiler (tsc -p DIR) the same errors hookbox check finds", async () => {
    const dir = join(tempDir("hookbox-init-"), "project");
    await capture(() => initCommand([dir]));
    const policy = join(dir, "policy.ts");
    writeFileSync(policy, readFileSync(policy, "utf8").replace("ctx.middlewareName)", "7)"));
    const editor = tscNoEmit(dir);
    expect(editor.code).toBe(2);
    expect(editor.output).toMatch(/policy\.ts\(\d+,\d+\): error TS2345/);
    const checked = await capture(() => checkCommand([policy]));
    expect(checked.code).toBe(1);
    expect(checked.stdout).toContain("error TS2345");
  });

  it("annotates the template's hook return types, so the editor's own compiler reports a bad return at its line", async () => {
    const dir = join(tempDir("hookbox-init-"), "project");
    await capture(() => initCommand([dir]));
    const policy = join(dir, "policy.ts");
    const text = readFileSync(policy, "utf8");
    expect(text).toContain("beforeToolCall(p): BeforeToolCallReturn {");
    expect(text).toContain("onToolError(p): OnToolErrorReturn {");
    // A deny without its reason: plain tsc (no hookbox check) reports the return's own line.
    const broken = text.replace(
      'return { action: "deny", reason: `refunds over ${REFUND_LIMIT} need a human` };',
      'return { action: "deny" };',
    );
    expect(broken).not.toBe(text);
    writeFileSync(policy, broken);
    const line = broken.split("\n").findIndex((candidate) => candidate.includes('return { action: "deny" };')) + 1;
    const editor = tscNoEmit(dir);
    expect(editor.output).toMatch(new RegExp(`policy\\.ts\\(${line},\\d+\\): error TS2322`));
  });

  it("refuses a directory that already holds its files, writing nothing", async () => {
    const dir = tempDir("hookbox-init-");
    writeFileSync(join(dir, "policy.ts"), "// mine\n");
    const result = await capture(() => initCommand([dir]));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("already contains policy.ts");
    expect(readFileSync(join(dir, "policy.ts"), "utf8")).toBe("// mine\n");
    expect(() => readFileSync(join(dir, "tsconfig.json"))).toThrow();
  });

  it("exits 2 with usage without a directory", async () => {
    expect((await capture(() => initCommand([]))).code).toBe(2);
  });
});
