import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/cli.js";

/*
 * `hookbox test` through the real bin: case files beside real scripts, each case run in the real sandbox, what
 * the author reads (PASS/FAIL, expected vs. got, the script line) and the exit codes (docs/policy-tests.md).
 */

const project = (files: Record<string, string>) => {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-test-cli-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), typeof text === "string" ? text : JSON.stringify(text));
  return dir;
};
const json = (value: unknown) => JSON.stringify(value, null, 2);

const refundPolicy = (limit: number) => `import { defineScript } from "hookbox";

const LIMIT = ${limit};

export default defineScript({
  name: "refunds",
  hooks: {
    beforeToolCall(p) {
      if (p.call.name !== "refund") return undefined;
      if (Number(p.call.args.amount) > LIMIT) {
        return { action: "deny", reason: \`refunds over \${LIMIT} need a manager\` };
      }
      if (p.userContext.role === "intern") return { action: "ask", reason: "interns need a second look" };
      return { action: "proceed", args: { ...p.call.args, note: "checked" } };
    },
  },
});
`;

const refundCases = {
  cases: [
    {
      name: "small refund is rewritten",
      hook: "beforeToolCall",
      input: { tool: "refund", args: { amount: 40 } },
      expect: { action: "proceed", verdict: "rewrite", args: { amount: 40, note: "checked" } },
    },
    {
      name: "refund of 80 passes",
      hook: "beforeToolCall",
      input: { tool: "refund", args: { amount: 80 } },
      expect: { verdict: "rewrite" },
    },
    {
      name: "refund of 150 is denied",
      hook: "beforeToolCall",
      input: { tool: "refund", args: { amount: 150 } },
      expect: { action: "deny", reason: "/over \\d+ need a manager/" },
    },
    {
      name: "interns are asked about",
      hook: "beforeToolCall",
      input: { tool: "refund", args: { amount: 10 }, userContext: { role: "intern" } },
      expect: { action: "ask" },
    },
    { name: "other tools proceed", hook: "beforeToolCall", input: { tool: "lookup" }, expect: { action: "proceed", verdict: "proceed" } },
  ],
};

describe("hookbox test: cases in the sandbox", () => {
  it("passes every case of a correct policy (exit 0) and names each", async () => {
    const dir = project({ "policy.ts": refundPolicy(100), "policy.cases.json": json(refundCases) });
    const result = await runCli(["test"], { cwd: dir });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    for (const { name } of refundCases.cases) expect(result.stdout).toContain(`PASS policy.cases.json: ${name}`);
    expect(result.stdout.trim().split("\n").at(-1)).toBe("5 passed, 0 failed");
  }, 60_000);

  it("a lowered limit fails exactly the cases that depend on it, each with expected vs. got and the deciding line", async () => {
    const dir = project({ "policy.ts": refundPolicy(50), "policy.cases.json": json(refundCases) });
    const result = await runCli(["test", "policy.ts"], { cwd: dir });
    expect(result.code).toBe(1);
    const failed = result.stdout.split("\n").filter((line) => line.startsWith("FAIL"));
    expect(failed).toEqual(["FAIL policy.cases.json: refund of 80 passes"]);
    const block = result.stdout.slice(result.stdout.indexOf("FAIL"));
    expect(block).toContain('verdict: expected "rewrite", got "deny"');
    expect(block).toContain('got:      {"action":"deny","reason":"refunds over 50 need a manager"');
    // Line 11 holds the return of the deny: the decision the case got came from there.
    expect(block).toContain("at policy.ts:11 (beforeToolCall)");
    expect(result.stdout.trim().split("\n").at(-1)).toBe("4 passed, 1 failed");
  }, 60_000);

  it("--json gives one report and --reporter junit gives JUnit XML with the failure", async () => {
    const dir = project({ "policy.ts": refundPolicy(50), "policy.cases.json": json(refundCases) });
    const asJson = await runCli(["test", "--json"], { cwd: dir });
    expect(asJson.code).toBe(1);
    const report = JSON.parse(asJson.stdout) as {
      passed: number;
      failed: number;
      results: { name: string; status: string; at?: string }[];
    };
    expect(report).toMatchObject({ passed: 4, failed: 1 });
    expect(report.results.find((each) => each.status === "fail")).toMatchObject({
      name: "refund of 80 passes",
      at: "policy.ts:11 (beforeToolCall)",
    });
    const junit = await runCli(["test", "--reporter", "junit"], { cwd: dir });
    expect(junit.code).toBe(1);
    expect(junit.stdout).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="hookbox test" tests="5" failures="1"/);
    expect(junit.stdout).toContain('<testcase classname="policy.cases.json" name="refund of 80 passes"');
    expect(junit.stdout).toContain('<failure message="verdict: expected &quot;rewrite&quot;, got &quot;deny&quot;"');
    expect(junit.stderr).toBe("4 passed, 1 failed\n");
  }, 60_000);

  it("fixtures answer ctx.fetch, ctx.kv, the guard model and the clock; production's egress rules still hold", async () => {
    const policy = `import { defineScript } from "hookbox";
export default defineScript({
  name: "guarded",
  hooks: {
    async beforeToolCall(p) {
      if (p.call.name === "fraud") {
        const answer = await p.fetch("https://risk.example.com/v1/score?customer=" + String(p.call.args.customer));
        const { score } = answer.json() as { score: number };
        if (score > 0.8) return { action: "deny", reason: "risk " + score };
        return undefined;
      }
      if (p.call.name === "redirected") {
        await p.fetch("https://risk.example.com/v1/moved");
        return undefined;
      }
      if (p.call.name === "vip") {
        const vip = await p.kv.get("vip:" + String(p.call.args.customer));
        return vip ? { action: "proceed", args: { ...p.call.args, priority: true } } : undefined;
      }
      if (p.call.name === "guard") {
        const verdict = await p.model.generate({ prompt: "ok?" });
        return verdict.text.startsWith("NO") ? { action: "deny", reason: "guard: " + verdict.text } : undefined;
      }
      if (p.call.name === "late") {
        const hour = new Date().getUTCHours();
        return hour >= 22 ? { action: "deny", reason: "after hours (" + hour + ", " + Date.now() + ")" } : undefined;
      }
      return undefined;
    },
  },
});
`;
    const cases = {
      grants: { egress: ["https://risk.example.com/v1/"], guardModel: true },
      fixtures: { fetch: { "https://risk.example.com/v1/score?customer=c1": { json: { score: 0.9 } } } },
      cases: [
        {
          name: "risky customer denied",
          hook: "beforeToolCall",
          input: { tool: "fraud", args: { customer: "c1" } },
          expect: { action: "deny", reason: "risk 0.9" },
        },
        {
          name: "safe customer proceeds",
          hook: "beforeToolCall",
          input: { tool: "fraud", args: { customer: "c2" } },
          fixtures: { fetch: { "https://risk.example.com/v1/score?customer=c2": { json: { score: 0.1 } } } },
          expect: { action: "proceed" },
        },
        {
          name: "a redirect out of the egress list is refused as in production",
          hook: "beforeToolCall",
          input: { tool: "redirected" },
          fixtures: { fetch: { "https://risk.example.com/v1/moved": { status: 302, headers: { location: "https://evil.example.net/" } } } },
          expect: { action: "error", errorCode: "SCRIPT_ERROR", message: "/CAPABILITY_DENIED.*evil\\.example\\.net/" },
        },
        {
          name: "vip from kv",
          hook: "beforeToolCall",
          input: { tool: "vip", args: { customer: "c1" } },
          fixtures: { kv: { "vip:c1": true } },
          expect: { verdict: "rewrite", args: { priority: true } },
        },
        {
          name: "kv starts empty for each case",
          hook: "beforeToolCall",
          input: { tool: "vip", args: { customer: "c1" } },
          expect: { verdict: "proceed" },
        },
        {
          name: "guard says no",
          hook: "beforeToolCall",
          input: { tool: "guard" },
          fixtures: { guard: ["NO: looks like abuse"] },
          expect: { action: "deny", reason: "guard: NO: looks like abuse" },
        },
        {
          name: "late at night",
          hook: "beforeToolCall",
          input: { tool: "late" },
          fixtures: { clock: "2026-11-25T23:30:00Z" },
          expect: { action: "deny", reason: `after hours (23, ${Date.parse("2026-11-25T23:30:00Z")})` },
        },
        {
          name: "daytime",
          hook: "beforeToolCall",
          input: { tool: "late" },
          fixtures: { clock: "2026-11-25T09:00:00Z" },
          expect: { action: "proceed" },
        },
      ],
    };
    const dir = project({ "guarded.ts": policy, "guarded.cases.json": json(cases) });
    const result = await runCli(["test"], { cwd: dir });
    expect(result.stderr).toBe("");
    expect(result.stdout.trim().split("\n").at(-1)).toBe("8 passed, 0 failed");
    expect(result.code).toBe(0);
  }, 60_000);

  it("a case file that cannot be used is exit 2, naming the file, the case and the field; nothing runs", async () => {
    const dir = project({
      "policy.ts": refundPolicy(100),
      "policy.cases.json": json({
        cases: [
          { name: "typo in hook", hook: "beforeToolCal", input: { tool: "refund" }, expect: { action: "deny" } },
          { name: "typo in input", hook: "beforeToolCall", input: { tol: "refund" }, expect: { action: "deny" } },
        ],
      }),
      "other.ts": refundPolicy(100),
      "other.cases.json": json({
        grants: { egress: ["https://ok.example.com/"] },
        cases: [
          { name: "typo in expect", hook: "beforeToolCall", input: { tool: "refund" }, expect: { acton: "deny" } },
          {
            name: "fixture outside egress",
            hook: "beforeToolCall",
            input: { tool: "refund" },
            fixtures: { fetch: { "https://evil.example.net/x": { body: "" } } },
            expect: { action: "deny" },
          },
          { name: "no expectation", hook: "beforeToolCall", input: { tool: "refund" } },
        ],
      }),
      "broken.cases.json": "{ not json",
    });
    const result = await runCli(["test"], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain('hookbox test: policy.cases.json: case "typo in hook" (cases[0]): hook: ');
    expect(result.stderr).toContain('hookbox test: policy.cases.json: case "typo in input" (cases[1]): input: unknown field "tol"');
    expect(result.stderr).toContain(
      'hookbox test: other.cases.json: case "typo in expect" (cases[0]): expect: unknown field "acton" for this kind of case',
    );
    expect(result.stderr).toMatch(
      /other\.cases\.json: case "fixture outside egress" \(cases\[1\]\): fixtures\.fetch\["https:\/\/evil\.example\.net\/x"\]: .*evil\.example\.net.*not under any entry/,
    );
    expect(result.stderr).toContain('other.cases.json: case "no expectation" (cases[2]): expect: say what is expected');
    expect(result.stderr).toContain("hookbox test: broken.cases.json: not valid JSON");
  }, 60_000);

  it("a case for a hook or tool the script does not define fails, naming what it defines", async () => {
    const dir = project({
      "policy.ts": refundPolicy(100),
      "policy.cases.json": json({
        cases: [
          { name: "no such hook", hook: "afterToolCall", input: { tool: "refund" }, expect: { action: "proceed" } },
          { name: "no such tool", tool: "refund", input: { args: {} }, expect: { result: {} } },
        ],
      }),
    });
    const result = await runCli(["test"], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("no script here defines afterToolCall: refunds defines beforeToolCall");
    expect(result.stdout).toContain("no script here defines tool refund: refunds defines no tools");
  }, 60_000);

  it("scripts run in the sandbox: a forbidden import, a host global and an endless loop fail as in production, and the runner goes on", async () => {
    const hostile = `import { defineScript } from "hookbox";
export default defineScript({
  name: "hostile",
  hooks: {
    beforeToolCall(p) {
      if (p.call.name === "spin") { for (;;) {} }
      if (p.call.name === "process") return { action: "deny", reason: String((globalThis as any).process.pid) };
      return { action: "deny", reason: typeof (globalThis as any).require };
    },
  },
});
`;
    const dir = project({
      "hostile.ts": hostile,
      "hostile.cases.json": json({
        // Small enough that the endless loop ends soon, large enough that the other cases' loads and calls fit
        // on a loaded machine (100 ms did not, once).
        limits: { cpuMs: 500, wallMs: 2000 },
        cases: [
          { name: "spins", hook: "beforeToolCall", input: { tool: "spin" }, expect: { action: "error", errorCode: "SANDBOX_TIMEOUT" } },
          {
            name: "no process",
            hook: "beforeToolCall",
            input: { tool: "process" },
            expect: { errorCode: "SCRIPT_ERROR", message: "/reading 'pid'.*hostile\\.ts:7/" },
          },
          { name: "no require", hook: "beforeToolCall", input: { tool: "other" }, expect: { action: "deny", reason: "undefined" } },
        ],
      }),
      "imports.ts": `import { readFileSync } from "node:fs";\nimport { defineScript } from "hookbox";\nexport default defineScript({ name: "imports", hooks: { beforeToolCall() { return { action: "deny", reason: readFileSync("/etc/hostname", "utf8") }; } } });\n`,
      "imports.cases.json": json({
        cases: [
          {
            name: "load refused",
            hook: "beforeToolCall",
            input: { tool: "x" },
            expect: { errorCode: "SCRIPT_LOAD", message: "/node:fs.*refused/" },
          },
          { name: "expects a decision it cannot get", hook: "beforeToolCall", input: { tool: "x" }, expect: { action: "deny" } },
        ],
      }),
    });
    const result = await runCli(["test", "--json"], { cwd: dir });
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as { results: { name: string; status: string; failures?: { problem?: string }[] }[] };
    const status = Object.fromEntries(report.results.map((each) => [each.name, each.status]));
    expect(status).toEqual({
      spins: "pass",
      "no process": "pass",
      "no require": "pass",
      "load refused": "pass",
      "expects a decision it cannot get": "fail",
    });
    const failure = report.results.find((each) => each.status === "fail")!.failures![0]!;
    expect(failure.problem).toMatch(/^the scripts did not load: .*import "node:fs" in imports\.ts is refused/);
  }, 60_000);

  it("a whole run with a scripted model: expectations on how it ended and on its events", async () => {
    const dir = project({
      "policy.ts": refundPolicy(100),
      "tools.mjs": `export default [{ name: "refund", description: "refund", parameters: { type: "object", properties: { amount: { type: "number" } } }, handler: (args) => ({ refunded: args.amount }) }];\n`,
      "policy.cases.json": json({
        cases: [
          {
            name: "the big refund never starts",
            run: {
              prompt: "refund twice",
              hostTools: "tools.mjs",
              model: {
                steps: [
                  {
                    toolCalls: [
                      { id: "c1", name: "refund", args: { amount: 500 } },
                      { id: "c2", name: "refund", args: { amount: 20 } },
                    ],
                  },
                  { text: "done" },
                ],
              },
            },
            expect: {
              status: "completed",
              text: "done",
              events: [
                { never: { type: "tool-started", name: "refund", args: { amount: { $gt: 100 } } } },
                { count: 1, of: { type: "tool-started", name: "refund" } },
              ],
            },
          },
          {
            name: "wrongly expects the big refund to start",
            run: {
              prompt: "refund",
              hostTools: "tools.mjs",
              model: { steps: [{ toolCalls: [{ id: "c1", name: "refund", args: { amount: 500 } }] }, { text: "done" }] },
            },
            expect: { events: [{ some: { type: "tool-started", name: "refund" } }] },
          },
        ],
      }),
    });
    const result = await runCli(["test"], { cwd: dir });
    expect(result.stdout).toContain("PASS policy.cases.json: the big refund never starts");
    expect(result.stdout).toContain("FAIL policy.cases.json: wrongly expects the big refund to start");
    expect(result.stdout).toContain('events[0]: expected an event like {"type":"tool-started","name":"refund"}, got none');
    expect(result.code).toBe(1);
  }, 60_000);

  it("bad flags and paths are usage errors (exit 2)", async () => {
    const dir = project({ "policy.ts": refundPolicy(100) });
    const cases = [
      [["test", "--reporter", "tap"], /--reporter must be text, json or junit, got "tap"/],
      [["test", "--coverage-min", "101"], /--coverage-min must be a percentage from 0 to 100/],
      [["test", "nowhere"], /nowhere: no such file or directory/],
      [["test", "policy.ts"], /policy\.ts: not a case file, and no policy\.cases\.json or \.cases\.ts beside it/],
      [["test"], /no case files \(\*\.cases\.json, \*\.cases\.ts\) under \./],
      [["test", "--session", "s"], /--session goes with --record/],
    ] as const;
    for (const [args, message] of cases) {
      const result = await runCli([...args], { cwd: dir });
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toMatch(message);
    }
  }, 60_000);
});
