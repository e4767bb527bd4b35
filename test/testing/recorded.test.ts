import { beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/cli.js";

/*
 * A run recorded by the real `hookbox run --store` becomes a case file (`hookbox test --record`): it passes against
 * the policy that made it, and fails against a version that decides one of its calls differently, naming the call.
 */

const dir = mkdtempSync(join(tmpdir(), "hookbox-test-record-"));
const policy = (limit: number) => `import { defineScript } from "hookbox";
export default defineScript({
  name: "refunds",
  hooks: {
    beforeToolCall(p) {
      if (p.call.name === "refund" && Number(p.call.args.amount) > ${limit}) return { action: "deny", reason: "over ${limit}" };
      if (p.call.name === "refund") return { action: "proceed", args: { ...p.call.args, checked: true } };
      return undefined;
    },
  },
});
`;

beforeAll(async () => {
  writeFileSync(join(dir, "policy.ts"), policy(100));
  writeFileSync(
    join(dir, "tools.mjs"),
    `export default [{ name: "refund", description: "refund", parameters: { type: "object", properties: { amount: { type: "number" } } }, handler: (args) => ({ refunded: args.amount }) }];\n`,
  );
  const refund = (id: string, amount: number) => ({ id, name: "refund", args: { amount } });
  writeFileSync(
    join(dir, "model.json"),
    JSON.stringify({ steps: [{ toolCalls: [refund("c1", 30), refund("c2", 80), refund("c3", 500)] }, { text: "done" }] }),
  );
  const recorded = await runCli(
    [
      "run",
      "policy.ts",
      "--model",
      "scripted:model.json",
      "--host-tools",
      "tools.mjs",
      "--prompt",
      "refund three",
      "--store",
      "store.db",
      "--session",
      "s1",
    ],
    { cwd: dir },
  );
  expect(recorded.code, recorded.stderr).toBe(0);
}, 60_000);

describe("hookbox test --record", () => {
  it("writes a case per run whose steps are its recorded hook calls and decisions; it passes against the same policy", async () => {
    const written = await runCli(
      ["test", "--record", "--store", "store.db", "--session", "s1", "--script", "policy.ts", "--out", "recorded.cases.json"],
      {
        cwd: dir,
      },
    );
    expect(written.stderr).toBe("");
    expect(written.code).toBe(0);
    expect(written.stdout).toMatch(/^wrote recorded\.cases\.json: 1 case, \d+ hook calls\n$/);
    const file = JSON.parse(readFileSync(join(dir, "recorded.cases.json"), "utf8")) as {
      script: string;
      cases: { steps: { hook: string; input: { payload: { call?: { id: string } } }; expect: Record<string, unknown> }[] }[];
    };
    expect(file.script).toBe("policy.ts");
    // The run's three calls are made in parallel, so they are recorded in the order their hooks ran: sorted here.
    const toolSteps = file.cases[0]!.steps.filter((step) => step.hook === "beforeToolCall").sort((a, b) =>
      String(a.input.payload.call?.id).localeCompare(String(b.input.payload.call?.id)),
    );
    expect(toolSteps.map((step) => [step.input.payload.call?.id, step.expect])).toEqual([
      ["c1", { verdict: "rewrite", action: "proceed", args: { $eq: { amount: 30, checked: true } } }],
      ["c2", { verdict: "rewrite", action: "proceed", args: { $eq: { amount: 80, checked: true } } }],
      ["c3", { verdict: "deny", action: "deny" }],
    ]);
    const passed = await runCli(["test", "recorded.cases.json"], { cwd: dir });
    expect(passed.stdout).toContain("1 passed, 0 failed");
    expect(passed.code).toBe(0);
  }, 60_000);

  it("a version that decides one recorded call differently fails, naming that call; the same version passes", async () => {
    writeFileSync(join(dir, "strict.ts"), policy(50));
    const cases = JSON.parse(readFileSync(join(dir, "recorded.cases.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(dir, "strict.cases.json"), JSON.stringify({ ...cases, script: "strict.ts" }));
    const failed = await runCli(["test", "strict.cases.json"], { cwd: dir });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/step \d \(beforeToolCall, call c2 refund \{"amount":80\}\):/);
    expect(failed.stdout).toContain('verdict: expected "rewrite", got "deny"');
    expect(failed.stdout).not.toContain("call c1");
    expect(failed.stdout).not.toContain("call c3");
    expect(failed.stdout).toContain("0 passed, 1 failed");
  }, 60_000);

  it("--run records only the runs named, numbered as the session's; a run of no such session is refused", async () => {
    const again = await runCli(
      [
        "run",
        "policy.ts",
        "--model",
        "scripted:model.json",
        "--host-tools",
        "tools.mjs",
        "--prompt",
        "again",
        "--store",
        "store.db",
        "--session",
        "s1",
      ],
      { cwd: dir },
    );
    expect(again.code, again.stderr).toBe(0);
    const written = await runCli(["test", "--record", "--store", "store.db", "--session", "s1", "--out", "all.cases.json"], { cwd: dir });
    expect(written.code, written.stderr).toBe(0);
    const all = JSON.parse(readFileSync(join(dir, "all.cases.json"), "utf8")) as { cases: { name: string }[] };
    expect(all.cases).toHaveLength(2);
    const second = /\((run_[0-9a-f]+)\)$/.exec(all.cases[1]!.name)![1]!;
    const picked = await runCli(
      [
        "test",
        "--record",
        "--store",
        "store.db",
        "--session",
        "s1",
        "--run",
        second,
        "--script",
        "policy.ts",
        "--out",
        "picked.cases.json",
      ],
      { cwd: dir },
    );
    expect(picked.stdout).toMatch(/^wrote picked\.cases\.json: 1 case, \d+ hook calls\n$/);
    const file = JSON.parse(readFileSync(join(dir, "picked.cases.json"), "utf8")) as { cases: { name: string }[] };
    expect(file.cases.map((c) => c.name)).toEqual([`run 2 of session s1 (${second})`]);
    expect((await runCli(["test", "picked.cases.json"], { cwd: dir })).stdout).toContain("1 passed, 0 failed");
    const stranger = await runCli(
      ["test", "--record", "--store", "store.db", "--session", "s1", "--run", "run_nope", "--out", "z.cases.json"],
      {
        cwd: dir,
      },
    );
    expect(stranger.code).toBe(2);
    expect(stranger.stderr).toContain("session s1 has no run run_nope");
    expect((await runCli(["test", "--run", second], { cwd: dir })).stderr).toContain("--run goes with --record");
  }, 120_000);

  it("a missing session, a missing store and an existing --out are usage errors that write nothing", async () => {
    const noSession = await runCli(["test", "--record", "--store", "store.db", "--session", "nope", "--out", "x.cases.json"], { cwd: dir });
    expect(noSession.code).toBe(2);
    expect(noSession.stderr).toContain("store.db has no session nope");
    const noStore = await runCli(["test", "--record", "--store", "missing.db", "--session", "s1", "--out", "y.cases.json"], { cwd: dir });
    expect(noStore.code).toBe(2);
    expect(noStore.stderr).toContain("--store missing.db: no such file");
    const exists = await runCli(["test", "--record", "--store", "store.db", "--session", "s1", "--out", "recorded.cases.json"], {
      cwd: dir,
    });
    expect(exists.code).toBe(2);
    expect(exists.stderr).toContain("recorded.cases.json already exists");
    const noFlags = await runCli(["test", "--record", "--store", "store.db"], { cwd: dir });
    expect(noFlags.code).toBe(2);
    expect(noFlags.stderr).toContain("--record needs --store and --session");
  }, 60_000);
});
