import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, runCommand } from "../helpers/cli.js";

/*
 * `hookbox/testing` as a policy author uses it: a project whose node_modules has this package (as `npm i hookbox`
 * gives it), test files run by `node --test` and by vitest in child processes, and its types checked by tsc.
 */

const policy = `import { defineScript } from "hookbox";

const LIMIT = 100;

export default defineScript({
  name: "refunds",
  tools: [
    {
      name: "quote",
      description: "a quote",
      parameters: { type: "object", properties: { amount: { type: "number" } } },
      handler: (args) => ({ quoted: Number(args.amount) * 2 }),
    },
  ],
  middleware: [
    async function redactCards(turn, next) {
      for (const block of turn.blocks) {
        const text = block.payload.text;
        if (typeof text === "string") block.payload.text = text.replace(/\\d{12}(\\d{4})/g, "****$1");
      }
      return next(turn);
    },
  ],
  hooks: {
    async beforeToolCall(p) {
      if (p.call.name === "spin") for (;;) {}
      if (p.call.name === "count") {
        const seen = Number((await p.kv.get("count")) ?? 0) + 1;
        await p.kv.set("count", seen);
        return { action: "deny", reason: "seen " + seen };
      }
      if (p.call.name === "risk") {
        const answer = await p.fetch("https://risk.example.com/score");
        return { action: "deny", reason: "risk " + answer.body };
      }
      if (p.call.name === "refund" && Number(p.call.args.amount) > LIMIT) return { action: "deny", reason: "over " + LIMIT };
      return undefined;
    },
    onToolError(p) {
      return p.attempt < 3 ? { action: "retry", backoffMs: 10 } : { action: "fail", error: "gave up" };
    },
  },
});
`;

const nodeTest = `import { test, after } from "node:test";
import assert from "node:assert/strict";
import { loadPolicy } from "hookbox/testing";

const policy = await loadPolicy("policy.ts", { grants: { egress: ["https://risk.example.com/"] }, limits: { cpuMs: 100 } });
after(() => policy.close());

test("a big refund is denied", async () => {
  const decision = await policy.beforeToolCall({ tool: "refund", args: { amount: 500 } });
  assert.deepEqual(decision, { action: "deny", reason: "over 100" });
});

test("a small refund has no opinion", async () => {
  assert.equal(await policy.beforeToolCall({ tool: "refund", args: { amount: 5 } }), undefined);
});

test("kv starts empty for every call; a session keeps it", async () => {
  assert.equal((await policy.beforeToolCall({ tool: "count" }))?.reason, "seen 1");
  assert.equal((await policy.beforeToolCall({ tool: "count" }))?.reason, "seen 1");
  const session = await policy.session({ kv: { count: 10 } });
  await session.beforeToolCall({ tool: "count" });
  assert.equal((await session.beforeToolCall({ tool: "count" }))?.reason, "seen 12");
  assert.equal(await session.kv("count"), 12);
  await session.close();
});

test("fetch answers come from the fixtures", async () => {
  const session = await policy.session({ fetch: { "https://risk.example.com/score": { body: "0.7" } } });
  assert.equal((await session.beforeToolCall({ tool: "risk" }))?.reason, "risk 0.7");
  await session.close();
});

test("onToolError, a tool and a middleware", async () => {
  assert.deepEqual(await policy.onToolError({ tool: "refund", error: "down", attempt: 1 }), { action: "retry", backoffMs: 10 });
  assert.deepEqual(await policy.onToolError({ tool: "refund", error: "down", attempt: 3 }), { action: "fail", error: "gave up" });
  assert.deepEqual(await policy.tool("quote", { amount: 21 }), { quoted: 42 });
  const passed = await policy.middleware("redactCards", { messages: [{ role: "user", text: "card 4111111111111111" }] });
  assert.deepEqual(passed.texts, ["card ****1111"]);
  assert.equal(passed.calledNext, true);
});

test("an endless loop rejects as in production", async () => {
  await assert.rejects(policy.beforeToolCall({ tool: "spin" }), (error) => error.code === "SANDBOX_TIMEOUT");
});

test("a hook the script does not define is a clear error", async () => {
  await assert.rejects(policy.beforeRun({ prompt: "hi" }), /policy\\.ts defines no beforeRun hook \\(it defines beforeToolCall, onToolError\\)/);
});

test("a fixture URL no egress entry allows is refused as production refuses it", async () => {
  await assert.rejects(policy.session({ fetch: { "https://evil.example.net/": { body: "" } } }), /fixtures\\.fetch\\["https:\\/\\/evil\\.example\\.net\\/"\\]: .*not under any entry/);
});

test("written to fail: the limit is 100", async () => {
  assert.deepEqual(await policy.beforeToolCall({ tool: "refund", args: { amount: 150 } }), undefined);
});
`;

const vitestTest = `import { afterAll, expect, it } from "vitest";
import { loadPolicy } from "hookbox/testing";

const policy = await loadPolicy("policy.ts");
afterAll(() => policy.close());

it("denies a big refund", async () => {
  expect(await policy.beforeToolCall({ tool: "refund", args: { amount: 500 } })).toEqual({ action: "deny", reason: "over 100" });
});

it("proceeds for a small one", async () => {
  expect(await policy.beforeToolCall({ tool: "refund", args: { amount: 50 } })).toBeUndefined();
});
`;

const typed = `import { loadPolicy, defineCases } from "hookbox/testing";

const policy = await loadPolicy("policy.ts", { fixtures: { clock: "2026-01-01T00:00:00Z" } });
const decision = await policy.beforeToolCall({ tool: "refund", args: { amount: 1 } });
if (decision?.action === "deny") console.log(decision.reason.length);
if (decision?.action === "rewrite") console.log("never"); // compile error
const retry = await policy.onToolError({ tool: "refund", error: "x" });
if (retry?.action === "retry") console.log(retry.backoffMs);
await policy.beforeToolCall({ tool: 1 }); // compile error

export default defineCases({
  cases: [
    { name: "ok", hook: "beforeToolCall", input: { tool: "refund" }, expect: { action: "deny" }, check: (got) => got.action === "deny" },
    { name: "typo", hook: "beforeToolCal", input: {} }, // compile error
  ],
});
`;

function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-testing-helper-"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(repoRoot, join(dir, "node_modules", "hookbox"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "policy-project", private: true, type: "module" }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const run = (command: string, args: string[], cwd: string) => runCommand(command, args, { cwd });

describe("hookbox/testing", () => {
  it("node --test: hook calls return the validated decision from the real sandbox; failures name the test", async () => {
    const dir = project({ "policy.ts": policy, "policy.test.mjs": nodeTest });
    const result = await run(process.execPath, ["--test", "--test-reporter=tap", "policy.test.mjs"], dir);
    const lines = result.stdout.split("\n");
    const verdicts = lines.filter((line) => /^ {0,4}(not )?ok \d+ - /.test(line)).map((line) => line.trim());
    expect(verdicts).toEqual([
      "ok 1 - a big refund is denied",
      "ok 2 - a small refund has no opinion",
      "ok 3 - kv starts empty for every call; a session keeps it",
      "ok 4 - fetch answers come from the fixtures",
      "ok 5 - onToolError, a tool and a middleware",
      "ok 6 - an endless loop rejects as in production",
      "ok 7 - a hook the script does not define is a clear error",
      "ok 8 - a fixture URL no egress entry allows is refused as production refuses it",
      "not ok 9 - written to fail: the limit is 100",
    ]);
    // The failing test's report points at its line in the author's file.
    const failingLine = nodeTest.split("\n").findIndex((line) => line.startsWith('test("written to fail')) + 1;
    expect(result.stdout).toContain(`policy.test.mjs:${failingLine}:1`);
    expect(result.code).toBe(1);
  }, 120_000);

  it("vitest runs the helper in a project of its own; the sandbox pool closes with the file", async () => {
    const dir = project({ "policy.ts": policy, "policy.test.mjs": vitestTest });
    const vitest = join(repoRoot, "node_modules", "vitest", "vitest.mjs");
    const result = await run(process.execPath, [vitest, "run", "--root", dir, "--reporter", "verbose"], dir);
    expect(result.stdout + result.stderr).toMatch(/2 passed/);
    expect(result.code).toBe(0);
  }, 120_000);

  it("calls and case files are typed by the script API's own declarations", async () => {
    const dir = project({ "policy.ts": policy, "typed.ts": typed });
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: [],
        },
        files: ["typed.ts"],
      }),
    );
    const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");
    const result = await run(process.execPath, [tsc, "-p", "."], dir);
    const errorLines = [...result.stdout.matchAll(/^typed\.ts\((\d+),\d+\): error/gm)].map((match) => Number(match[1]));
    const expected = typed.split("\n").flatMap((line, index) => (line.endsWith("// compile error") ? [index + 1] : []));
    expect(result.stdout).not.toMatch(/node_modules\/hookbox/);
    expect([...new Set(errorLines)]).toEqual(expected);
  }, 120_000);
});
