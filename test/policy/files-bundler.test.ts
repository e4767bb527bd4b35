import { describe, expect, it } from "vitest";
import { bundleUploadedFiles } from "../../src/sandbox/files-bundler.js";
import { HookboxError } from "../../src/errors.js";

const policy = (body: string) => `import { defineScript } from "hookbox";\n${body}\nexport default defineScript({ hooks: {} });\n`;

async function diagnosticsOf(files: Record<string, string>, entry = "policy.ts") {
  const error = await bundleUploadedFiles({ files, entry, label: "policy@upload" }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(HookboxError);
  expect((error as HookboxError).code).toBe("SCRIPT_INVALID");
  return (error as HookboxError).details.diagnostics as { file: string; line: number; column: number; message: string }[];
}

describe("bundling an uploaded file map", () => {
  it("bundles relative imports from the map, with or without extensions and index files", async () => {
    const bundle = await bundleUploadedFiles({
      files: {
        "policy.ts": policy(
          'import { limit } from "./lib/util";\nimport { other } from "./lib/more/index.ts";\nconsole.log(limit, other);',
        ),
        "lib/util.ts": 'import { base } from "../base.js";\nexport const limit: number = base * 2;',
        "base.js": "export const base = 50;",
        "lib/more/index.ts": "export const other = 'x';",
      },
      entry: "policy.ts",
      label: "policy@v1",
    });
    expect(bundle.code).toContain("base * 2");
    expect(bundle.displayPath).toBe("policy@v1");
    expect(bundle.defaultName).toBe("policy");
  });

  it("refuses an import climbing out of the map, naming the import, file, line and column", async () => {
    const diagnostics = await diagnosticsOf(
      { "policy.ts": policy(""), "lib/util.ts": 'export * from "../../etc/passwd";', "x.ts": "" },
      "lib/util.ts",
    );
    expect(diagnostics[0]).toMatchObject({ file: "lib/util.ts", line: 1, column: 15 });
    expect(diagnostics[0].message).toContain('import "../../etc/passwd" in lib/util.ts is refused: it points outside the uploaded files');
  });

  it("refuses `../x` from the top, absolute paths, file URLs, packages and Node built-ins", async () => {
    for (const [spec, why] of [
      ["../x", "outside the uploaded files"],
      ["/etc/passwd", "absolute paths"],
      ["file:///etc/passwd", "absolute paths"],
      ["lodash", "packages are not available"],
      ["node:fs", "Node built-in"],
      ["child_process", "Node built-in"],
    ]) {
      const diagnostics = await diagnosticsOf({ "policy.ts": policy(`import x from ${JSON.stringify(spec)};\nconsole.log(x);`) });
      expect(diagnostics[0]).toMatchObject({ file: "policy.ts", line: 2 });
      expect(diagnostics[0].message).toContain(`import "${spec}" in policy.ts is refused`);
      expect(diagnostics[0].message).toContain(why);
    }
  });

  it("reports syntax errors and a missing import with file:line:column", async () => {
    const syntax = await diagnosticsOf({ "policy.ts": policy(""), "lib/a.ts": "export const a = ;" }, "lib/a.ts");
    expect(syntax[0]).toMatchObject({ file: "lib/a.ts", line: 1, column: 18 });
    const missing = await diagnosticsOf({ "policy.ts": policy('import { a } from "./nope";\nconsole.log(a);') });
    expect(missing[0].message).toContain('import "./nope" in policy.ts is refused: no uploaded file matches it');
  });
});
