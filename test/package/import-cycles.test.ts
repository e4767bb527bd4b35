import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

const run = promisify(execFile);
const script = join(import.meta.dirname, "../../scripts/import-cycles.mjs");
const dirs: string[] = [];

function project(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "hookbox-cycles-"));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("scripts/import-cycles.mjs", () => {
  it("passes on this repository (its allowlist names every cycle left)", async () => {
    const { stdout } = await run(process.execPath, [script]);
    expect(stdout).toMatch(/no cycles among \d+ modules/);
  });

  it("fails naming the modules of a cycle, type-only imports and .js specifiers included", async () => {
    const root = project({
      "src/a.ts": 'import { b } from "./nested/b.js";\nexport const a = b;\n',
      "src/nested/b.ts": 'import type { C } from "../c.js";\nexport const b: C = 1;\n',
      "src/c.ts": 'import type { a } from "./a.js";\nexport type C = typeof a;\n',
      "src/leaf.ts": 'import { a } from "./a.js";\nexport const leaf = a;\n',
    });
    const failure = await run(process.execPath, [script, root]).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain("1 import cycle(s)");
    expect(failure?.stderr).toContain("src/a.ts | src/c.ts | src/nested/b.ts");
    expect(failure?.stderr).not.toContain("leaf.ts");
  });

  it("passes an acyclic graph", async () => {
    const root = project({
      "src/a.ts": 'import { b } from "./b.js";\nexport const a = b;\n',
      "src/b.ts": "export const b = 1;\n",
    });
    const { stdout } = await run(process.execPath, [script, root]);
    expect(stdout).toContain("no cycles among 2 modules");
  });
});
