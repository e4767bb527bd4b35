import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { typeCheckFiles } from "../../src/check/check-files.js";
import { typeCheckFilesIsolated } from "../../src/check/check-isolated.js";

describe("type-checking an uploaded file map", () => {
  it("reports a hook's bad return in the imported file with its line and column", () => {
    const { errors } = typeCheckFiles(
      {
        "policy.ts": `import { defineScript } from "hookbox";\nimport { decide } from "./lib/decide";\nexport default defineScript({ hooks: { beforeToolCall: decide } });\n`,
        "lib/decide.ts": `import type { BeforeToolCallPayload, BeforeToolCallReturn } from "hookbox";\nexport function decide(p: BeforeToolCallPayload): BeforeToolCallReturn {\n  const n: number = "x";\n  return { action: "deny", reason: String(n) };\n}\n`,
      },
      "policy.ts",
    );
    expect(errors).toEqual([{ file: "lib/decide.ts", line: 3, column: 9, message: expect.stringContaining("TS2322") }]);
  });

  it("checks each hook return where it is written, as `hookbox check` does", () => {
    const { errors } = typeCheckFiles(
      {
        "policy.ts": `import { defineScript } from "hookbox";\nexport default defineScript({ hooks: { beforeToolCall() { return { action: "nope" }; } } });\n`,
      },
      "policy.ts",
    );
    expect(errors[0]).toMatchObject({ file: "policy.ts", line: 2 });
  });

  it("never reads host files: a type import of a real host .ts file is an unresolved module", () => {
    const hostFile = fileURLToPath(new URL("../../src/errors.ts", import.meta.url)).replace(/\.ts$/, "");
    const { errors } = typeCheckFiles(
      {
        "policy.ts": `import type { HookboxError } from ${JSON.stringify(hostFile)};\nimport { defineScript } from "hookbox";\nexport default defineScript({});\nexport type Y = HookboxError;\n`,
      },
      "policy.ts",
    );
    expect(errors[0]).toMatchObject({ file: "policy.ts", line: 1, message: expect.stringContaining("TS2307") });
  });
});

describe("type-checking an upload off the event loop", () => {
  const files = { "policy.ts": `import { defineScript } from "hookbox";\nconst n: number = "x";\nexport default defineScript({});\n` };

  it("answers from the worker thread, and a check past its deadline is refused while the next one still works", async () => {
    expect((await typeCheckFilesIsolated(files, "policy.ts")).errors).toEqual([
      { file: "policy.ts", line: 2, column: 7, message: expect.stringContaining("TS2322") },
    ]);
    const late = await typeCheckFilesIsolated(files, "policy.ts", { timeoutMs: 1 });
    expect(late.errors[0].message).toBe("type-checking took longer than 1 ms; simplify the types");
    expect((await typeCheckFilesIsolated(files, "policy.ts")).errors[0]).toMatchObject({ line: 2, column: 7 });
  }, 120_000);
});
