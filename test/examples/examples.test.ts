import { describe, expect, it } from "vitest";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { repoRoot, runCli } from "../helpers/cli.js";

const examplesDir = join(repoRoot, "examples");
const exampleDirs = readdirSync(examplesDir, { withFileTypes: true }).filter((entry) => entry.isDirectory());
const scripts = exampleDirs.flatMap(({ name: dir }) =>
  readdirSync(join(examplesDir, dir))
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join("examples", dir, f)),
);

describe("examples", () => {
  it("finds the example scripts", () => {
    expect(exampleDirs.length).toBeGreaterThan(0);
    expect(scripts.length).toBeGreaterThanOrEqual(exampleDirs.length);
  });

  it.each(scripts)("%s type-checks with hookbox check", async (script) => {
    const r = await runCli(["check", script]);
    expect(r.stdout + r.stderr).toBe("");
    expect(r.code).toBe(0);
  });

  it("the examples' case files pass with hookbox test, and their node:test files with node --test (hookbox/testing)", async () => {
    const cases = await runCli(["test", "examples"]);
    expect(cases.stderr).toBe("");
    expect(cases.stdout).toMatch(/^\d+ passed, 0 failed$/m);
    expect(cases.code).toBe(0);
    const testFiles = exampleDirs.flatMap(({ name: dir }) =>
      readdirSync(join(examplesDir, dir))
        .filter((f) => f.endsWith(".test.mjs"))
        .map((f) => join("examples", dir, f)),
    );
    expect(testFiles.length).toBeGreaterThan(0);
    const node = spawnSync(process.execPath, ["--test", "--test-reporter=tap", ...testFiles], { cwd: repoRoot, encoding: "utf8" });
    expect(node.stdout).toMatch(/^# fail 0$/m);
    expect(node.status).toBe(0);
  }, 120_000);

  it("every example directory runs through the CLI with its expected outcome (scripts/smoke.mjs)", () => {
    const r = spawnSync(process.execPath, [join(repoRoot, "scripts/smoke.mjs")], { encoding: "utf8" });
    for (const { name } of exampleDirs) expect(r.stdout).toMatch(new RegExp(`^ok +${name} \\(`, "m"));
    expect(r.stdout).toContain(`${exampleDirs.length} passed, 0 failed`);
    expect(r.status).toBe(0);
  });
});
