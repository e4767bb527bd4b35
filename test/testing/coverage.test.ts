import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/cli.js";

/*
 * `hookbox test --coverage` on a sample policy whose reached lines, branches and functions are counted by hand
 * below; the lcov it writes is read by Debian's genhtml (installed by .ci/run).
 */

// Line numbers matter: the hand count below names them.
const policy = `import { defineScript } from "hookbox";

export default defineScript({
  name: "cov",
  hooks: {
    beforeToolCall(p) {
      if (p.call.name !== "refund") return undefined;
      const amount = Number(p.call.args.amount);
      if (amount > 100) {
        return { action: "deny", reason: "big" };
      }
      return amount > 50 ? { action: "ask", reason: "medium" } : undefined;
    },
    onToolError() {
      return { action: "fail", error: "no" };
    },
  },
});
`;

const cases = {
  cases: [
    { name: "other tools", hook: "beforeToolCall", input: { tool: "lookup" }, expect: { action: "proceed" } },
    { name: "big refund", hook: "beforeToolCall", input: { tool: "refund", args: { amount: 500 } }, expect: { action: "deny" } },
    { name: "small refund", hook: "beforeToolCall", input: { tool: "refund", args: { amount: 10 } }, expect: { action: "proceed" } },
  ],
};

/*
 * By hand, for the three cases (each a run of its own, so the module's top level runs three times):
 * - lines with code: 3 (export default), 7 (the if and its return), 8, 9, 10, 12, 15; reached: all but 15 (6 of 7).
 *   Hits: 3 -> 3, 7 -> 3, 8 -> 2, 9 -> 2, 10 -> 1, 12 -> 1, 15 -> 0.
 * - branches: the if of line 7 (then: "other tools"; else: both refunds), the if of line 9 (then: 500; the absent
 *   else: 10), the ?: of line 12 (true: never; false: 10): 5 of 6 arms.
 * - functions: beforeToolCall (3 calls) and onToolError (never): 1 of 2.
 */
const handCount = {
  lines: [
    [3, 3],
    [7, 3],
    [8, 2],
    [9, 2],
    [10, 1],
    [12, 1],
    [15, 0],
  ],
  branches: [
    [7, 0, 0, 1],
    [7, 0, 1, 2],
    [9, 1, 0, 1],
    [9, 1, 1, 1],
    [12, 2, 0, 0],
    [12, 2, 1, 1],
  ],
};

const project = () => {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-test-coverage-"));
  writeFileSync(join(dir, "policy.ts"), policy);
  writeFileSync(join(dir, "policy.cases.json"), JSON.stringify(cases));
  return dir;
};

describe("hookbox test --coverage", () => {
  it("counts the lines, branches and functions the cases reached, as counted by hand, and writes lcov genhtml reads", async () => {
    const dir = project();
    const result = await runCli(["test", "--coverage"], { cwd: dir });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lcov = readFileSync(join(dir, "coverage", "lcov.info"), "utf8");
    const da = [...lcov.matchAll(/^DA:(\d+),(\d+)$/gm)].map((match) => [Number(match[1]), Number(match[2])]);
    expect(da).toEqual(handCount.lines);
    const brda = [...lcov.matchAll(/^BRDA:(\d+),(\d+),(\d+),(\d+)$/gm)].map((match) => match.slice(1).map(Number));
    expect(brda).toEqual(handCount.branches);
    expect(lcov).toContain(`SF:${join(dir, "policy.ts")}\n`);
    expect(lcov).toMatch(/FN:6,beforeToolCall\nFN:14,onToolError\nFNDA:3,beforeToolCall\nFNDA:0,onToolError\nFNF:2\nFNH:1\n/);
    expect(lcov).toMatch(/LF:7\nLH:6\nend_of_record\n$/);
    // The summary: one row per script, then the total.
    expect(result.stdout).toMatch(/policy\.ts +85\.7% \(6\/7\) +83\.3% \(5\/6\) +50\.0% \(1\/2\) +15\n/);
    expect(result.stdout).toContain("lcov: coverage/lcov.info");

    const html = join(dir, "html");
    const genhtml = spawnSync("genhtml", ["--branch-coverage", "--output-directory", html, join(dir, "coverage", "lcov.info")], {
      encoding: "utf8",
    });
    expect(genhtml.error).toBeUndefined();
    expect(genhtml.stderr).not.toMatch(/error|warning/i);
    expect(genhtml.status).toBe(0);
    expect(existsSync(join(html, "index.html"))).toBe(true);
  }, 60_000);

  it("--coverage-min fails under the bar (exit 1) and passes at it; --coverage-file and --json carry the numbers", async () => {
    const dir = project();
    const under = await runCli(["test", "--coverage-min", "90"], { cwd: dir });
    expect(under.code).toBe(1);
    expect(under.stdout).toContain("coverage 85.7% of lines is under --coverage-min 90%");
    expect(under.stdout).toContain("3 passed, 0 failed");
    const at = await runCli(["test", "--coverage-min", "85.7", "--coverage-file", "out/cov.info", "--json"], { cwd: dir });
    expect(at.code).toBe(0);
    const report = JSON.parse(at.stdout) as { coverage: { linesPercent: number; minPercent: number; files: { lines: unknown }[] } };
    expect(report.coverage).toMatchObject({ linesPercent: 85.7, minPercent: 85.7 });
    expect(report.coverage.files[0]!.lines).toEqual({ found: 7, hit: 6 });
    expect(readFileSync(join(dir, "out", "cov.info"), "utf8")).toMatch(/LF:7\nLH:6\n/);
  }, 60_000);

  it("coverage counts in the sandbox: a script that overwrites its counters spoils only its own report", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hookbox-test-coverage-"));
    writeFileSync(
      join(dir, "liar.ts"),
      `import { defineScript } from "hookbox";
(globalThis as any).__hookbox_coverage__ = { counts: { length: 1e9 }, site: "x" };
export default defineScript({ name: "liar", hooks: { beforeToolCall() { return { action: "deny", reason: "no" }; } } });
`,
    );
    writeFileSync(
      join(dir, "liar.cases.json"),
      JSON.stringify({ cases: [{ name: "denies", hook: "beforeToolCall", input: { tool: "x" }, expect: { action: "deny" } }] }),
    );
    const result = await runCli(["test", "--coverage"], { cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("1 passed, 0 failed");
    // Nothing believable was read: every line counts as not reached.
    expect(readFileSync(join(dir, "coverage", "lcov.info"), "utf8")).toMatch(/LH:0\n/);
  }, 60_000);
});
