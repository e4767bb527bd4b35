import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { hookReturnSchemas } from "../../src/contracts/hook-returns.js";
import { typeCheck } from "../../src/check/compile.js";
import type { HookName } from "../../src/turns/keys.gen.js";

/*
 * types/hookbox.d.ts (what script authors compile against) and src/contracts/hook-returns.ts (what the host
 * enforces) must draw the same line. Each example is source text: evaluated for zod, compiled for TypeScript,
 * both as a hook's return statement (the way `hookbox check` sees a script) and as a value of the return type.
 */

type Table = { accepted: string[]; rejected: string[]; zodOnly?: string[] };

const TABLES: Record<HookName, Table> = {
  beforeToolCall: {
    accepted: [
      "undefined",
      `{ action: "proceed" }`,
      `{ action: "proceed", args: { id: "A17", amount: 50 } }`,
      `{ action: "skip", result: { cached: true } }`,
      `{ action: "skip", result: null, reason: "cached" }`,
      `{ action: "deny", reason: "over limit" }`,
      `{ action: "abort", reason: "fraud" }`,
      `{ action: "ask", reason: "refund over 100" }`,
      `{ action: "ask", reason: "refund over 100", timeoutMs: 60000 }`,
    ],
    rejected: [
      "null",
      `"deny"`,
      "{}",
      `{ action: "deny" }`,
      `{ action: "explode" }`,
      `{ action: "abort" }`,
      `{ action: "skip" }`,
      `{ action: "deny", reason: 5 }`,
      `{ action: "deny", reason: "r", extra: 1 }`,
      `{ action: "proceed", args: [1, 2] }`,
      `{ action: "proceed", args: "id=A17" }`,
      `{ action: "retry" }`,
      `{ result: 1 }`,
      `{ action: "ask" }`,
      `{ action: "ask", reason: "r", timeoutMs: "60s" }`,
      `{ action: "ask", reason: "r", args: { id: "A17" } }`,
    ],
    zodOnly: [`{ action: "ask", reason: "r", timeoutMs: 0 }`, `{ action: "ask", reason: "r", timeoutMs: 2.5 }`],
  },
  afterToolCall: {
    accepted: [
      "undefined",
      "{}",
      `{ result: { ok: true } }`,
      `{ result: null }`,
      `{ error: "boom" }`,
      `{ error: null }`,
      `{ result: "redacted", error: null }`,
      `{ action: "abort", reason: "leak" }`,
    ],
    rejected: [
      "null",
      `{ action: "abort" }`,
      `{ action: "deny", reason: "x" }`,
      `{ action: "proceed" }`,
      `{ action: "explode" }`,
      `{ result: 1, extra: true }`,
      `{ error: 5 }`,
      `{ action: "abort", reason: "x", result: 1 }`,
    ],
  },
  onToolError: {
    accepted: [
      "undefined",
      `{ action: "retry" }`,
      `{ action: "retry", backoffMs: 50 }`,
      `{ action: "retry", backoffMs: 0, args: { id: "B2" } }`,
      `{ action: "fail" }`,
      `{ action: "fail", error: "gave up" }`,
      `{ action: "abort", reason: "x" }`,
    ],
    rejected: [
      "null",
      "{}",
      `{ action: "abort" }`,
      `{ action: "skip", result: 1 }`,
      `{ action: "fail", error: 5 }`,
      `{ action: "retry", backoffMs: "50" }`,
      `{ action: "retry", extra: 1 }`,
      `{ result: 1 }`,
    ],
    // Value refinements a type cannot express: the host rejects them at run time, the compiler cannot.
    zodOnly: [`{ action: "retry", backoffMs: -1 }`, `{ action: "retry", backoffMs: 1.5 }`],
  },
  beforeRun: {
    accepted: [
      "undefined",
      `{ action: "proceed" }`,
      `{ action: "proceed", prompt: "Refund order A17 (customer verified)" }`,
      `{ action: "deny", reason: "prompt injection" }`,
    ],
    rejected: [
      "null",
      "{}",
      `{ action: "deny" }`,
      `{ action: "abort", reason: "x" }`,
      `{ action: "proceed", prompt: 5 }`,
      `{ action: "proceed", args: {} }`,
      `{ action: "skip", result: 1 }`,
      `{ prompt: "rewritten" }`,
    ],
    zodOnly: [`{ action: "proceed", prompt: "" }`],
  },
  beforeFinish: {
    accepted: ["undefined", `{ action: "continue", message: "Cite the order id." }`, `{ action: "abort", reason: "no order id" }`],
    rejected: [
      "null",
      "{}",
      `{ action: "continue" }`,
      `{ action: "continue", message: ["a"] }`,
      `{ action: "abort" }`,
      `{ action: "proceed" }`,
      `{ action: "deny", reason: "x" }`,
      `{ action: "continue", message: "m", extra: 1 }`,
    ],
    zodOnly: [`{ action: "continue", message: "" }`],
  },
};

const RETURN_TYPES: Record<HookName, string> = {
  beforeToolCall: "BeforeToolCallReturn",
  afterToolCall: "AfterToolCallReturn",
  onToolError: "OnToolErrorReturn",
  beforeRun: "BeforeRunReturn",
  beforeFinish: "BeforeFinishReturn",
};

const dir = join(process.cwd(), ".hookbox-contract-snippets");

function snippets() {
  const overlay = new Map<string, string>();
  const cases: { hook: HookName; example: string; expected: boolean; zodOnly: boolean; files: string[] }[] = [];
  for (const [hook, table] of Object.entries(TABLES) as [HookName, Table][]) {
    const all = [
      ...table.accepted.map((example) => ({ example, expected: true, zodOnly: false })),
      ...table.rejected.map((example) => ({ example, expected: false, zodOnly: false })),
      ...(table.zodOnly ?? []).map((example) => ({ example, expected: false, zodOnly: true })),
    ];
    all.forEach(({ example, expected, zodOnly }, index) => {
      const asHook = join(dir, `${hook}-${index}-hook.ts`);
      const asAsyncHook = join(dir, `${hook}-${index}-async.ts`);
      const asValue = join(dir, `${hook}-${index}-value.ts`);
      overlay.set(
        asHook,
        `import { defineScript } from "hookbox";\nexport default defineScript({ hooks: { ${hook}(p) {\n  if (p.timestampMs > 0) return ${example};\n} } });\n`,
      );
      overlay.set(
        asAsyncHook,
        `import { defineScript } from "hookbox";\nexport default defineScript({ hooks: { ${hook}: async (p) => {\n  return ${example};\n} } });\n`,
      );
      overlay.set(
        asValue,
        `import type { ${RETURN_TYPES[hook]} } from "hookbox";\nexport const decision: ${RETURN_TYPES[hook]} = ${example};\n`,
      );
      cases.push({ hook, example, expected, zodOnly, files: [asHook, asAsyncHook, asValue] });
    });
  }
  return { overlay, cases };
}

describe("hook return contracts: types/hookbox.d.ts agrees with the host's zod schemas", () => {
  const { overlay, cases } = snippets();
  const diagnostics = typeCheck([...overlay.keys()], overlay);
  const errorsIn = (file: string) => diagnostics.filter((diagnostic) => diagnostic.file === file);

  it("compiles the snippet set without errors outside the snippets", () => {
    expect(diagnostics.filter((diagnostic) => !diagnostic.file || !overlay.has(diagnostic.file))).toEqual([]);
  });

  for (const testCase of cases) {
    const verdict = testCase.expected ? "accept" : "reject";
    it(`${testCase.hook}: zod and TypeScript both ${testCase.zodOnly ? "(zod only) " : ""}${verdict} ${testCase.example}`, () => {
      const value: unknown = Function(`"use strict"; return (${testCase.example});`)();
      const schema = hookReturnSchemas[testCase.hook] as z.ZodType;
      expect(schema.safeParse(value).success, "zod").toBe(testCase.expected);
      const typeScriptAccepts = testCase.zodOnly ? true : testCase.expected;
      for (const file of testCase.files) {
        const errors = errorsIn(file);
        expect(errors.length === 0, `${file.slice(dir.length + 1)}: ${errors.map((e) => e.message).join(" | ")}`).toBe(typeScriptAccepts);
        // A rejected return is reported on the return's own line (line 3 of the hook snippets).
        if (!typeScriptAccepts && !file.endsWith("-value.ts")) expect(errors[0]!.line).toBe(3);
      }
    });
  }

  it("covers every hook the host knows", () => {
    expect(Object.keys(TABLES).sort()).toEqual(Object.keys(hookReturnSchemas).sort());
  });
});
