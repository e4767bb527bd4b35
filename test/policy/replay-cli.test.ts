import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonLines, runCli } from "../helpers/cli.js";
import { startOpenAIServer } from "../helpers/openai-server.js";

/*
 * `hookbox replay` over a store of runs recorded by the real `hookbox run` against a real OpenAI-compatible
 * server on loopback. The host tool appends to a counter file and the server counts model requests:
 * replay must change neither. The server stays up until the end, so a model call made by a replay would
 * reach it and be counted (a closed server would only make such a call fail unseen).
 */
const dir = mkdtempSync(join(tmpdir(), "hookbox-replay-"));
const store = join(dir, "store.db");
const counter = join(dir, "tool-calls.log");
let modelRequests: unknown[] = [];
let modelServer: Awaited<ReturnType<typeof startOpenAIServer>> | undefined;
afterAll(async () => modelServer?.close());

const policy = (limit: number) => `import { defineScript } from "hookbox";
export default defineScript({
  name: "refund-policy",
  hooks: {
    beforeToolCall(p) {
      if (p.call.name === "refund" && Number(p.call.args.amount) > ${limit}) return { action: "deny", reason: "over ${limit}" };
    },
  },
});
`;

// Sorted: A and B are asked for in one answer and run in parallel, in either order.
const toolCalls = () => (existsSync(counter) ? readFileSync(counter, "utf8").trim().split("\n").filter(Boolean).sort() : []);

beforeAll(async () => {
  writeFileSync(join(dir, "policy.ts"), policy(100));
  writeFileSync(join(dir, "same.ts"), policy(100));
  writeFileSync(join(dir, "strict.ts"), policy(50));
  // A new run-level guard: replay shows which recorded runs it would have kept from starting.
  writeFileSync(
    join(dir, "gate.ts"),
    `import { defineScript } from "hookbox";
export default defineScript({
  name: "gate",
  hooks: {
    beforeRun(p) { if (p.prompt.includes("C")) return { action: "deny", reason: "C goes to a human" }; },
    beforeFinish(p) { if (p.text.includes("needs a human")) return { action: "continue", message: "try again" }; },
  },
});
`,
  );
  writeFileSync(join(dir, "broken.ts"), `import { readFileSync } from "node:fs";\nexport default readFileSync;\n`);
  writeFileSync(
    join(dir, "tools.mjs"),
    `import { appendFileSync } from "node:fs";
export default [{
  name: "refund",
  description: "Refund an order",
  parameters: { type: "object", properties: { id: { type: "string" }, amount: { type: "number" } }, required: ["id", "amount"] },
  handler(args) { appendFileSync(${JSON.stringify(counter)}, args.id + "\\n"); return { refunded: args.amount }; },
}];
`,
  );
  const refund = (id: string, amount: number) => ({ id, name: "refund", args: { id, amount } });
  const server = (modelServer = await startOpenAIServer([
    { toolCalls: [refund("A", 30), refund("B", 80)] },
    { text: "A and B refunded" },
    { toolCalls: [refund("C", 120)] },
    { text: "C needs a human" },
    { toolCalls: [refund("D", 60)] },
    { text: "D refunded" },
  ]));
  modelRequests = server.requests;
  for (const prompt of ["refund A and B", "refund C", "refund D"]) {
    const recorded = await runCli(
      [
        "run",
        join(dir, "policy.ts"),
        "--model",
        "openai-compatible:fake",
        "--base-url",
        server.url,
        "--host-tools",
        join(dir, "tools.mjs"),
        "--store",
        store,
        "--tenant",
        "acme",
        "--prompt",
        prompt,
      ],
      { env: { OPENAI_API_KEY: "test-key" } },
    );
    expect(recorded.code, recorded.stderr).toBe(0);
  }
  expect(toolCalls()).toEqual(["A", "B", "D"]);
  expect(modelRequests).toHaveLength(6);
}, 120_000);

describe("hookbox replay", () => {
  it("lists exactly the calls a stricter policy flips, exits 1, and calls no model and no tool", async () => {
    const result = await runCli(["replay", "--store", store, "--scripts", join(dir, "strict.ts"), "--json"]);
    expect(result.code, result.stderr).toBe(1);
    const lines = jsonLines(result.stdout);
    const summary = lines.at(-1);
    const changes = lines.slice(0, -1);
    expect(changes.map((c) => [c.callId, c.hook, c.recorded, c.replayed, c.decision.reason])).toEqual([
      ["B", "beforeToolCall", "proceed", "deny", "over 50"],
      ["D", "beforeToolCall", "proceed", "deny", "over 50"],
    ]);
    // 4 beforeToolCall (A, B, C, D) and 3 afterToolCall (A, B, D: C was denied), and per run one beforeRun and
    // one beforeFinish (the run hooks' chains are recorded whether or not a script has them).
    expect(summary).toEqual({ runs: 3, calls: 13, same: 11, changed: { "proceed->deny": 2 }, errors: 0 });
    expect(toolCalls()).toEqual(["A", "B", "D"]);
    expect(modelRequests).toHaveLength(6);
  }, 120_000);

  it("exits 0 with the same policy, and prints a human summary", async () => {
    const result = await runCli(["replay", "--store", store, "--scripts", join(dir, "same.ts")]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe("replayed 13 calls of 3 runs: 13 same, 0 changed, 0 hook errors");
  }, 120_000);

  it("filters by session and time, prints each changed call in human form", async () => {
    const sessions = jsonLines((await runCli(["sessions", "--store", store, "--json"])).stdout);
    const third = sessions.find((s) => s.lastRun.prompt === "refund D").id;
    const one = await runCli(["replay", "--store", store, "--scripts", join(dir, "strict.ts"), "--session", third]);
    expect(one.code).toBe(1);
    expect(one.stdout).toContain(`session ${third} run `);
    expect(one.stdout).toContain("call D beforeToolCall (attempt 1): recorded proceed, now deny (over 50)");
    expect(one.stdout.trim().split("\n").at(-1)).toBe("replayed 4 calls of 1 runs: 3 same, 1 changed (proceed->deny: 1), 0 hook errors");
    const future = await runCli([
      "replay",
      "--store",
      store,
      "--scripts",
      join(dir, "strict.ts"),
      "--since",
      "2999-01-01T00:00:00Z",
      "--json",
    ]);
    expect(future.code).toBe(0);
    expect(jsonLines(future.stdout)).toEqual([{ runs: 0, calls: 0, same: 0, changed: {}, errors: 0 }]);
    expect((await runCli(["replay", "--store", store, "--scripts", join(dir, "strict.ts"), "--tenant", "globex", "--json"])).code).toBe(0);
  }, 120_000);

  it("replays run hooks too: a new beforeRun guard and beforeFinish check show the runs they would change", async () => {
    const result = await runCli(["replay", "--store", store, "--scripts", join(dir, "gate.ts"), "--json"]);
    expect(result.code, result.stderr).toBe(1);
    const lines = jsonLines(result.stdout);
    // Run C: the new guard denies it, and without the refund limit its call C would have gone through.
    expect(lines.slice(0, -1).map((c) => [c.callId, c.hook, c.attempt, c.recorded, c.replayed])).toEqual([
      ["run", "beforeRun", 1, "proceed", "deny"],
      ["C", "beforeToolCall", 1, "deny", "proceed"],
      ["run", "beforeFinish", 1, "proceed", "continue"],
    ]);
    expect(lines.at(-1)).toMatchObject({
      runs: 3,
      calls: 13,
      changed: { "proceed->deny": 1, "deny->proceed": 1, "proceed->continue": 1 },
    });
    expect(toolCalls()).toEqual(["A", "B", "D"]);
    expect(modelRequests).toHaveLength(6);
  }, 120_000);

  it("exits 2 naming the problem: a script that does not load, bad flags", async () => {
    const broken = await runCli(["replay", "--store", store, "--scripts", join(dir, "broken.ts")]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('import "node:fs"');
    const usage = await runCli(["replay", "--store", store]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--scripts");
    const since = await runCli(["replay", "--store", store, "--scripts", join(dir, "strict.ts"), "--since", "yesterday"]);
    expect(since.code).toBe(2);
    expect(since.stderr).toContain("--since");
  }, 120_000);
});
