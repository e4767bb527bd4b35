import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, runCli } from "../helpers/cli.js";

/*
 * `hookbox test` through the real bin, for what a case file can say beyond a plain hook case
 * (docs/policy-tests.md): `*.cases.ts` files with code, a tenant's script stack from a serve config (its scripts in
 * order, its grants), the `sequence` expectation on a whole run's events, every match operator (each passing, and
 * each failing with its own line), and `--wall` reaching the sandbox pool.
 */

/** A policy project: hookbox installed beside it (so a `.cases.ts` file imports "hookbox/testing"), its files. */
function project(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-test-features-"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(repoRoot, join(dir, "node_modules", "hookbox"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "policy-project", private: true, type: "module" }));
  for (const [name, content] of Object.entries(files))
    writeFileSync(join(dir, name), typeof content === "string" ? content : JSON.stringify(content, null, 2));
  return dir;
}

const lastLine = (stdout: string) => stdout.trim().split("\n").at(-1);
const failLines = (stdout: string) => stdout.split("\n").filter((line) => line.startsWith("FAIL"));

const refunds = `import { defineScript } from "hookbox";
export default defineScript({
  name: "refunds",
  hooks: {
    beforeToolCall(p) {
      if (p.call.name === "refund" && Number(p.call.args.amount) > 100) return { action: "deny", reason: "over 100" };
      if (p.call.name === "probe") return { action: "proceed", args: { amount: 150, currency: "EUR", tags: ["a", "b"] } };
    },
  },
  tools: [
    {
      name: "refund",
      description: "Refund an amount",
      parameters: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
      async handler(args) {
        return { refunded: args.amount };
      },
    },
  ],
});
`;

describe("hookbox test: case files with code, stacks, sequences and operators", () => {
  it("runs a *.cases.ts file: computed cases, check(got) functions, and a failing check's message", async () => {
    const dir = project({
      "policy.ts": refunds,
      "policy.cases.ts": `import { defineCases } from "hookbox/testing";

const amounts: number[] = [50, 100, 101, 5000];

export default defineCases({
  cases: [
    ...amounts.map((amount) => ({
      name: \`refund of \${amount}\`,
      hook: "beforeToolCall" as const,
      input: { tool: "refund", args: { amount } },
      check: (got: { action?: string; verdict?: string }) => (amount > 100 ? got.action === "deny" : got.verdict === "proceed"),
    })),
    {
      name: "written to fail: 5000 proceeds",
      hook: "beforeToolCall",
      input: { tool: "refund", args: { amount: 5000 } },
      check: (got: { action?: string }) => got.action === "proceed" || \`5000 was \${got.action}\`,
    },
  ],
});
`,
    });
    const result = await runCli(["test"], { cwd: dir });
    expect(result.stderr).toBe("");
    expect(result.stdout.split("\n").filter((line) => line.startsWith("PASS"))).toEqual([
      "PASS policy.cases.ts: refund of 50",
      "PASS policy.cases.ts: refund of 100",
      "PASS policy.cases.ts: refund of 101",
      "PASS policy.cases.ts: refund of 5000",
    ]);
    expect(failLines(result.stdout)).toEqual(["FAIL policy.cases.ts: written to fail: 5000 proceeds"]);
    expect(result.stdout).toContain("5000 was deny");
    expect(lastLine(result.stdout)).toBe("4 passed, 1 failed");
    expect(result.code).toBe(1);

    // A .cases.ts file that does not load, or exports nothing, is a problem of the file (exit 2), nothing runs.
    writeFileSync(join(dir, "broken.cases.ts"), `export const cases = [];\n`);
    const broken = await runCli(["test"], { cwd: dir });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain("broken.cases.ts: has no default export");
    expect(broken.stdout).toBe("");
  }, 120_000);

  it("a tenant's stack from a serve config: its scripts in order decide, with the tenant's grants", async () => {
    const second = `import { defineScript } from "hookbox";
export default defineScript({
  name: "wires",
  hooks: {
    async beforeToolCall(p) {
      if (p.call.name === "wire") return { action: "deny", reason: "no wires" };
      if (p.call.name === "score") {
        const answer = await p.fetch("https://risk.example.com/v1/score");
        return { action: "deny", reason: "risk " + answer.body };
      }
    },
  },
});
`;
    const cases = (tenant: object) => ({
      ...tenant,
      fixtures: { fetch: { "https://risk.example.com/v1/score": { body: "0.9" } } },
      cases: [
        {
          name: "the first script decides a big refund",
          hook: "beforeToolCall",
          input: { tool: "refund", args: { amount: 500 } },
          expect: { action: "deny", script: "refunds" },
        },
        {
          name: "the second script decides a wire",
          hook: "beforeToolCall",
          input: { tool: "wire" },
          expect: { script: "wires", reason: "no wires" },
        },
        {
          name: "the tenant's egress lets the fixture answer",
          hook: "beforeToolCall",
          input: { tool: "score" },
          expect: { reason: "risk 0.9" },
        },
      ],
    });
    const dir = project({
      "refunds.ts": refunds,
      "wires.ts": second,
      "model.json": { steps: [{ text: "hi" }] },
      "hookbox.json": {
        tenants: [
          {
            name: "acme",
            apiKeys: [{ sha256: "0".repeat(64) }],
            scripts: ["refunds.ts", "wires.ts"],
            model: "scripted:model.json",
            egress: ["https://risk.example.com/v1/"],
          },
        ],
      },
      "stack.cases.json": cases({ tenant: { config: "hookbox.json", name: "acme" } }),
    });
    const result = await runCli(["test", "stack.cases.json"], { cwd: dir });
    expect(result.stderr).toBe("");
    expect(lastLine(result.stdout)).toBe("3 passed, 0 failed");
    expect(result.code).toBe(0);

    // The same cases over the same scripts without the tenant: no egress grant, so the fixture URL is refused as
    // production refuses it, before anything runs.
    writeFileSync(join(dir, "bare.cases.json"), JSON.stringify(cases({ scripts: ["refunds.ts", "wires.ts"] })));
    const bare = await runCli(["test", "bare.cases.json"], { cwd: dir });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain(
      'bare.cases.json: case "the tenant\'s egress lets the fixture answer" (cases[2]): fixtures.fetch["https://risk.example.com/v1/score"]: ctx.fetch: https://risk.example.com/v1/score is denied: the tenant grants no egress',
    );

    writeFileSync(join(dir, "unknown.cases.json"), JSON.stringify(cases({ tenant: { config: "hookbox.json", name: "globex" } })));
    const unknown = await runCli(["test", "unknown.cases.json"], { cwd: dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('hookbox.json has no tenant named "globex"');
  }, 120_000);

  it("a whole run's events in a sequence: in order they pass, out of order the case fails naming the step not found", async () => {
    // One call per inference: the events of two calls made in parallel may interleave either way (their hooks
    // can be at the sandbox together), and this case is about the sequence matcher, not about that order.
    const run = {
      prompt: "refund twice",
      model: {
        steps: [
          { toolCalls: [{ id: "c1", name: "refund", args: { amount: 50 } }] },
          { toolCalls: [{ id: "c2", name: "refund", args: { amount: 500 } }] },
          { text: "done" },
        ],
      },
    };
    const dir = project({
      "policy.ts": refunds,
      "policy.cases.json": {
        cases: [
          {
            name: "the small refund runs, the big one is denied, the run completes",
            run,
            expect: {
              status: "completed",
              events: [
                {
                  sequence: [
                    { type: "tool-started", callId: "c1", name: "refund" },
                    { type: "hook-decision", callId: "c2", decision: { action: "deny" } },
                    { type: "run-finished", status: "completed" },
                  ],
                },
              ],
            },
          },
          {
            name: "written to fail: the run finishes before the small refund",
            run,
            expect: {
              events: [{ sequence: [{ type: "run-finished" }, { type: "tool-started", callId: "c1" }] }],
            },
          },
        ],
      },
    });
    const result = await runCli(["test"], { cwd: dir });
    expect(result.stderr).toBe("");
    expect(failLines(result.stdout)).toEqual(["FAIL policy.cases.json: written to fail: the run finishes before the small refund"]);
    expect(result.stdout).toContain(
      'events[0].sequence[1]: expected then an event like {"type":"tool-started","callId":"c1"}, got none after the earlier ones',
    );
    expect(lastLine(result.stdout)).toBe("1 passed, 1 failed");
    expect(result.code).toBe(1);
  }, 120_000);

  it("every match operator holds where it should and fails with its own line where it should not", async () => {
    const probe = (name: string, args: object) => ({ name, hook: "beforeToolCall", input: { tool: "probe" }, expect: { args } });
    const passing = [
      probe("$gt", { amount: { $gt: 100 } }),
      probe("$gte", { amount: { $gte: 150 } }),
      probe("$lt", { amount: { $lt: 200 } }),
      probe("$lte", { amount: { $lte: 150 } }),
      probe("$gt on text", { currency: { $gt: "EAA" } }),
      probe("$ne", { currency: { $ne: "USD" } }),
      probe("$eq", { tags: { $eq: ["a", "b"] } }),
      probe("$match", { currency: { $match: "^EU" } }),
      probe("$match with flags", { currency: { $match: "/^eur$/i" } }),
      probe("$exists", { currency: { $exists: true }, note: { $exists: false } }),
      probe("$not", { amount: { $not: { $lt: 100 } } }),
      probe("a pattern", { currency: "/^E.R$/" }),
      probe("several at once", { amount: { $gt: 100, $lt: 200, $ne: 120 } }),
    ];
    const failing: [object, string][] = [
      [probe("$gt", { amount: { $gt: 150 } }), "args.amount: expected > 150, got 150"],
      [probe("$gte", { amount: { $gte: 151 } }), "args.amount: expected >= 151, got 150"],
      [probe("$lt", { amount: { $lt: 150 } }), "args.amount: expected < 150, got 150"],
      [probe("$lte", { amount: { $lte: 149 } }), "args.amount: expected <= 149, got 150"],
      [probe("$gt across kinds", { amount: { $gt: "100" } }), 'args.amount: expected > "100", got 150'],
      [probe("$ne", { currency: { $ne: "EUR" } }), 'args.currency: expected anything but "EUR", got "EUR"'],
      [
        probe("$eq", { $eq: { amount: 150 } }),
        'args: expected exactly {"amount":150}, got {"amount":150,"currency":"EUR","tags":["a","b"]}',
      ],
      [probe("$match", { currency: { $match: "/^usd$/i" } }), 'args.currency: expected text matching /^usd$/i, got "EUR"'],
      [probe("$exists", { note: { $exists: true } }), "args.note: expected present, got (absent)"],
      [probe("$not", { amount: { $not: 150 } }), "args.amount: expected not 150, got 150"],
      [probe("an array's length", { tags: ["a"] }), 'args.tags: expected 1 element, got 2: ["a","b"]'],
    ];
    const dir = project({
      "policy.ts": refunds,
      "passing.cases.json": { script: "policy.ts", cases: passing },
      "failing.cases.json": { script: "policy.ts", cases: failing.map(([c]) => c) },
    });
    const passed = await runCli(["test", "passing.cases.json"], { cwd: dir });
    expect(passed.stderr).toBe("");
    expect(lastLine(passed.stdout)).toBe(`${passing.length} passed, 0 failed`);
    expect(passed.code).toBe(0);

    const failed = await runCli(["test", "failing.cases.json"], { cwd: dir });
    expect(lastLine(failed.stdout)).toBe(`0 passed, ${failing.length} failed`);
    expect(failed.code).toBe(1);
    // Each failing case's own block names its mismatch, as the author reads it.
    const blocks = failed.stdout.split(/^(?=FAIL )/m).filter((block) => block.startsWith("FAIL"));
    expect(blocks).toHaveLength(failing.length);
    for (const [index, [, line]] of failing.entries()) expect(blocks[index], line).toContain(line);
  }, 120_000);

  it("--wall reaches the sandbox: required with no bwrap refuses to start; none runs the same cases", async () => {
    const dir = project({
      "policy.ts": refunds,
      "policy.cases.json": {
        cases: [
          { name: "big refund", hook: "beforeToolCall", input: { tool: "refund", args: { amount: 500 } }, expect: { action: "deny" } },
        ],
      },
    });
    const noBwrap = { HOOKBOX_BWRAP: join(dir, "no-such-bwrap") };
    const required = await runCli(["test", "--wall", "required"], { cwd: dir, env: noBwrap });
    expect(required.code).not.toBe(0);
    expect(required.stdout + required.stderr).toContain("no-such-bwrap is not an executable");
    expect(required.stdout).not.toContain("PASS");
    const none = await runCli(["test", "--wall", "none"], { cwd: dir, env: noBwrap });
    expect(none.stderr).toBe("");
    expect(lastLine(none.stdout)).toBe("1 passed, 0 failed");
    expect(none.code).toBe(0);
    // With the real bwrap (installed here and by .ci/run), required runs inside the wall.
    const walled = await runCli(["test", "--wall", "required"], { cwd: dir });
    expect(walled.stderr).toBe("");
    expect(lastLine(walled.stdout)).toBe("1 passed, 0 failed");
    const bad = await runCli(["test", "--wall", "sometimes"], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--wall.*sometimes/);
  }, 120_000);
});
