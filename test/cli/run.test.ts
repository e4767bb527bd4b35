import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonLines, repoRoot, runCli, startCli } from "../helpers/cli.js";
import { writeSteps } from "../helpers/harness.js";

const tools = join(repoRoot, "test/fixtures/cli/tools.mjs");
/** `hookbox run` in step mode with JSON events, one echo call. */
const steppedRunArgs = () => ["run", "--model", `scripted:${echoSteps("hi")}`, "--host-tools", tools, "--prompt", "x", "--step", "--json"];
const echoSteps = (text: string) => writeSteps([{ toolCalls: [{ id: "c1", name: "echo", args: { text } }] }, { text: "done" }]);

describe("hookbox run", () => {
  it("--json prints only JSON Lines events, gap-free, run-finished last; exit 0", async () => {
    const r = await runCli(["run", "--model", `scripted:${echoSteps("hi")}`, "--host-tools", tools, "--prompt", "say hi", "--json"]);
    expect(r.code).toBe(0);
    const events = jsonLines(r.stdout);
    expect(events.map((e) => e.seq)).toEqual(events.map((_: unknown, i: number) => i + 1));
    expect(events[0]).toMatchObject({ type: "run-started", prompt: "say hi" });
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "done" });
    for (const e of events) expect(typeof e.sessionId === "string" && typeof e.inferenceId === "string").toBe(true);
  });

  it("exits 3 when a hook aborts the run", async () => {
    const r = await runCli(["run", "--model", `scripted:${echoSteps("abort-me")}`, "--host-tools", tools, "--prompt", "x", "--json"]);
    expect(r.code).toBe(3);
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: "run-finished", status: "aborted" });
  });

  it("exits 1 when the run fails (scripted model out of steps)", async () => {
    const r = await runCli([
      "run",
      "--model",
      `scripted:${writeSteps([{ toolCalls: [{ id: "c1", name: "echo", args: {} }] }])}`,
      "--host-tools",
      tools,
      "--prompt",
      "x",
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("ran out of steps");
  });

  it.each([
    [["run", "--prompt", "x"], "--model is required"],
    [["run", "--model", "scripted:/nonexistent/model.json", "--prompt", "x"], "/nonexistent/model.json"],
    [["run", "--model", "nope:x", "--prompt", "x"], "expected scripted:FILE"],
    [["run", "--model", "scripted:x.json", "--prompt", "x", "--max-iterations", "zero"], "--max-iterations must be a positive integer"],
    [["run", "--model", "scripted:x.json", "--prompt", "x", "--bogus"], "--bogus"],
    [["run", "--model", "scripted:x.json", "--prompt", "x", "--user-context", "{nope"], "--user-context is not JSON"],
    [
      ["run", "--model", "scripted:x.json", "--prompt", "x", "--approval-timeout-ms", "0"],
      "--approval-timeout-ms must be a positive integer",
    ],
    [
      ["run", "--model", "scripted:x.json", "--prompt", "x", "--max-finish-continues", "some"],
      "--max-finish-continues must be a non-negative",
    ],
    [["run", "--model", "scripted:x.json", "--prompt", "x", "--context-tokens", "1.5"], "--context-tokens must be a positive integer"],
    [["run", "--model", "scripted:x.json", "--prompt", "x", "--summarize-context"], "--summarize-context needs --guard-model SPEC"],
  ])("usage errors exit 2 with one clear line: %j", async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stdout).toBe("");
  });

  it("--step --json: a {continue} line on stdin continues that pause", async () => {
    const { child, done } = startCli(steppedRunArgs());
    let buffer = "";
    child.stdout.on("data", (chunk: string) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const event = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        if (event.type === "debugger.pause") child.stdin.write(`${JSON.stringify({ continue: event.pauseId })}\n`);
        if (event.type === "run-finished") child.stdin.end();
      }
    });
    const r = await done;
    expect(r.code).toBe(0);
    const events = jsonLines(r.stdout);
    expect(events.filter((e) => e.type === "debugger.continue").map((e) => e.reason)).toEqual(["continued", "continued"]);
  });

  it("SIGINT cancels a paused run at once; exit 130", async () => {
    const { child, done } = startCli(steppedRunArgs());
    child.stdout.on("data", (chunk: string) => {
      if (chunk.includes('"debugger.pause"')) child.kill("SIGINT");
    });
    const r = await done;
    expect(r.code).toBe(130);
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: "run-finished", status: "cancelled" });
  });
});

describe("hookbox run: the model's context", () => {
  it("--context-bytes bounds what each model call of a stored session is sent; the trims are events and transcript lines", async () => {
    const store = join(mkdtempSync(join(tmpdir(), "hookbox-context-")), "store.db");
    const steps = echoSteps("e".repeat(700));
    const run = (prompt: string, json = true) =>
      runCli([
        "run",
        "--model",
        `scripted:${steps}`,
        "--host-tools",
        tools,
        "--prompt",
        prompt,
        "--store",
        store,
        "--session",
        "sess_context",
        "--context-bytes",
        "2500",
        ...(json ? ["--json"] : []),
      ]);
    const trims = [];
    for (let i = 1; i <= 4; i++) {
      const r = await run(`question ${i}`);
      expect(r.code, r.stderr).toBe(0);
      trims.push(...jsonLines(r.stdout).filter((e) => e.type === "context-trimmed"));
    }
    expect(trims.length).toBeGreaterThan(0);
    expect(trims[0]).toMatchObject({ budgetBytes: 2500, summarized: false });
    const human = await run("question 5", false);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/✂ context: \d+ earlier message\(s\) left out \(\d+ bytes\); \d+ of 2500 bytes kept/);
  });
});

describe("hookbox run: the human transcript shows the run hooks' decisions", () => {
  it("beforeRun's rewrite and beforeFinish's continue appear as lines (examples/cite-order)", async () => {
    const ex = (file: string) => join(repoRoot, "examples", "cite-order", file);
    const r = await runCli([
      "run",
      ex("cite.ts"),
      "--model",
      `scripted:${ex("model.json")}`,
      "--host-tools",
      ex("tools.mjs"),
      "--prompt",
      "Where is my order?",
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("cite-order.beforeRun → rewrite: the model gets the prompt Where is my order?");
    expect(r.stdout).toContain("cite-order.beforeFinish → continue: Your answer must cite the order id");
    expect(r.stdout).toContain("final answer: Order A17 has shipped");
  });

  it("a denied run says so and exits 3", async () => {
    const ex = (file: string) => join(repoRoot, "examples", "cite-order", file);
    const dir = mkdtempSync(join(tmpdir(), "hookbox-deny-"));
    const script = join(dir, "guard.ts");
    writeFileSync(
      script,
      `import { defineScript } from "hookbox";
export default defineScript({ name: "guard", hooks: { beforeRun() { return { action: "deny", reason: "closed today" }; } } });
`,
    );
    const r = await runCli(["run", script, "--model", `scripted:${ex("model.json")}`, "--prompt", "hi"]);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain("guard.beforeRun → deny: closed today");
    expect(r.stdout).toContain("■ aborted (RUN_DENIED): guard: closed today after 0 inference(s)");
    expect(r.stderr).toBe("hookbox run: aborted (RUN_DENIED): guard: closed today\n");
  });
});

describe("hookbox run: a model nobody answers", () => {
  it("is named with its URL, not as the middleware that called it", async () => {
    // A loopback port that was just closed: nothing listens there.
    const { createServer } = await import("node:net");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    const dir = mkdtempSync(join(tmpdir(), "hookbox-unreachable-"));
    const script = join(dir, "stamp.ts");
    writeFileSync(
      script,
      `import { defineScript } from "hookbox";\nexport default defineScript({ middleware: [async function stamp(turn, next) { return next(turn); }] });\n`,
    );
    const r = await runCli(
      [
        "run",
        script,
        "--model",
        "openai-compatible:gpt-test",
        "--base-url",
        `http://127.0.0.1:${port}/v1`,
        "--model-retries",
        "0",
        "--prompt",
        "hi",
      ],
      { env: { OPENAI_API_KEY: "not-a-real-key" } },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^hookbox run: failed \\(MODEL\\): model openai-compatible\\.chat:gpt-test at http://127\\.0\\.0\\.1:${port}/v1/chat/completions was unreachable: `,
      ),
    );
    expect(r.stderr).not.toContain("middleware");
    expect(r.stderr).not.toContain("not-a-real-key");
  });
});
