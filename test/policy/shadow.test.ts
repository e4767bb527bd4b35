import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { twoToolSteps, writeFixture } from "../server/fixture.js";
import type { HookboxEvent } from "../../src/events/types.js";

// Shadow scripts through the real server: decisions recorded beside the active ones, never enforced.
let server: ServeProcess;
let log: string;
const acme = () => api(server.url, "acme-key");
const WALL_MS = 2000;

const script = (name: string, body: string, onHookError = "fail-closed") => ({
  "policy.ts": `import { defineScript } from "hookbox";\nexport default defineScript({ name: ${JSON.stringify(name)}, onHookError: ${JSON.stringify(onHookError)}, hooks: { ${body} } });\n`,
});

beforeAll(async () => {
  const fixture = writeFixture([
    { name: "acme", key: "acme-key", steps: twoToolSteps, limits: { wallMs: WALL_MS, cpuMs: 1000, memoryMb: 32 } },
  ]);
  log = fixture.log;
  server = await startServe({ config: fixture.config, store: fixture.store });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

async function upload(name: string, hooks: string, onHookError?: string) {
  const response = await acme().request("POST", "/v1/scripts", { name, entry: "policy.ts", files: script(name, hooks, onHookError) });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body as { version: number; bundleHash: string };
}

/** Deploys "allow" (version 1) as the active script with version 1 of each of `names` as shadows: the deployment's id. */
async function deployShadows(names: string[]): Promise<string> {
  const response = await acme().request("PUT", "/v1/deployment", {
    scripts: [{ name: "allow", version: 1 }],
    shadow: names.map((name) => ({ name, version: 1 })),
  });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.deploymentId as string;
}

async function runToEnd() {
  const { body: session } = await acme().request("POST", "/v1/sessions", {});
  const started = Date.now();
  const run = await acme().request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "record both" });
  const { messages } = await readEvents(server.url, "acme-key", run.body.runId);
  return {
    sessionId: session.sessionId as string,
    runId: run.body.runId as string,
    events: messages.map((m) => m.event),
    ms: Date.now() - started,
  };
}

type Decision = Extract<HookboxEvent, { type: "hook-decision" }>;

/** The active and the shadow hook decisions of a run's events. */
function decisionsOf(events: HookboxEvent[]): { active: Decision[]; shadow: Decision[] } {
  const decisions = events.filter((e): e is Decision => e.type === "hook-decision");
  return { active: decisions.filter((d) => !d.shadow), shadow: decisions.filter((d) => d.shadow) };
}

/** The tool calls the fixture's `record` tool executed for a session (its log file has a line per call). */
function executedTools(sessionId: string): string[] {
  return readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line.startsWith(`tool ${sessionId} `));
}

describe("shadow scripts", () => {
  it("record their decisions and failures as shadow events and in the report, and never change the run", async () => {
    await upload("allow", "beforeToolCall() { return { action: 'proceed' }; }");
    const strict = await upload(
      "strict",
      "beforeToolCall(p) { if (p.call.id === 'c2') return { action: 'deny', reason: 'strict says no' }; }",
    );
    // fail-open, so each shadow chain goes on past it to the next script.
    await upload(
      "thrower",
      "beforeToolCall() { throw new Error('shadow broke'); }, afterToolCall() { throw new Error('after broke'); }",
      "fail-open",
    );
    const deploymentId = await deployShadows(["thrower", "strict"]);

    const run = await runToEnd();
    expect(run.events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
    expect(executedTools(run.sessionId)).toHaveLength(2);
    const { active, shadow } = decisionsOf(run.events);
    expect(active.filter((d) => d.script !== "count-hooks").every((d) => d.script === "allow" && d.decision.action === "proceed")).toBe(
      true,
    );
    expect(shadow.every((d) => ["strict", "thrower"].includes(d.script) && d.version === 1 && d.bundleHash)).toBe(true);
    expect(shadow.find((d) => d.script === "strict" && d.callId === "c2")).toMatchObject({
      decision: { action: "deny", reason: "strict says no" },
      bundleHash: strict.bundleHash,
    });
    expect(shadow.filter((d) => d.script === "thrower").map((d) => d.decision.code)).toEqual([
      "SCRIPT_ERROR",
      "SCRIPT_ERROR",
      "SCRIPT_ERROR",
      "SCRIPT_ERROR",
    ]);
    // No shadow log lines, no denial the model saw.
    expect(run.events.filter((e) => e.type === "log")).toEqual([]);
    const c2 = run.events.find((e) => e.type === "tool-finished" && e.callId === "c2");
    expect(c2).toMatchObject({ result: { recorded: "c2" } });

    const report = await acme().request("GET", `/v1/deployments/${deploymentId}/shadow-report`);
    expect(report.status).toBe(200);
    // The thrower is fail-open, so each chain reaches strict: only c2's beforeToolCall disagrees. The run hooks'
    // chains (one beforeRun, one beforeFinish) agree.
    expect(report.body).toMatchObject({
      deploymentId,
      runs: 1,
      calls: 6,
      agreed: 5,
      disagreed: { "proceed->deny": 1 },
    });
    expect(report.body.samples).toEqual([
      expect.objectContaining({ runId: run.runId, callId: "c2", hook: "beforeToolCall", active: "proceed", shadow: "deny" }),
    ]);
  }, 120_000);

  /*
   * A loop and a memory bomb breach the shadow sandbox's limits, which moves it to the quarantine worker (nice 19).
   * On a busy machine that worker gets almost no CPU, so the shadows' later calls may outlast the run's wait for
   * them and be dropped, as docs/policy-lifecycle.md says: this test holds the run to that wait and each recorded
   * failure to a contained one, and does not count on every call being recorded.
   */
  it("contain loops and memory bombs: the run goes on unchanged and waits for them no longer than its bound", async () => {
    await upload("allow", "beforeToolCall() { return { action: 'proceed' }; }");
    await upload("bomber", "beforeToolCall() { const a = []; for (;;) a.push(new Array(1e6).fill(a.length)); }", "fail-open");
    await upload("looper", "beforeToolCall() { for (;;) {} }", "fail-open");
    await deployShadows(["bomber", "looper"]);

    const run = await runToEnd();
    expect(run.events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
    expect(executedTools(run.sessionId)).toHaveLength(2);
    // The wait for shadows is the wall limit per shadow script plus 1 s; the rest is a loaded machine's margin.
    expect(run.ms).toBeLessThan(WALL_MS * 2 + 1000 + 10_000);
    const { shadow } = decisionsOf(run.events);
    const errorOf = (script: string) => shadow.filter((d) => d.script === script).map((d) => d.decision.code);
    // The first bomb goes off in the shadows' own worker, before any quarantine: it is always recorded.
    expect(errorOf("bomber").length).toBeGreaterThanOrEqual(1);
    expect(errorOf("bomber").length).toBeLessThanOrEqual(2);
    expect(errorOf("looper").length).toBeLessThanOrEqual(2);
    // The bomb is stopped by whichever sandbox limit trips first on this machine: memory, or the CPU time V8 spends collecting.
    const contained: unknown[] = ["SANDBOX_MEMORY", "SANDBOX_TIMEOUT", "SANDBOX_CRASHED"];
    expect(
      errorOf("bomber").every((code) => contained.includes(code)),
      JSON.stringify(errorOf("bomber")),
    ).toBe(true);
    expect(errorOf("looper").every((code) => code === "SANDBOX_TIMEOUT" || code === "SANDBOX_CRASHED")).toBe(true);
    expect(run.events.filter((e) => e.type === "log")).toEqual([]);
  }, 120_000);

  it("reports agreement and each disagreement by its transition", async () => {
    await upload("strict2", "beforeToolCall(p) { if (p.call.id === 'c2') return { action: 'deny', reason: 'no' }; }");
    const deploymentId = await deployShadows(["strict2"]);
    const first = await runToEnd();
    const second = await runToEnd();
    for (const run of [first, second]) expect(run.events.at(-1)).toMatchObject({ status: "completed" });
    const report = await acme().request("GET", `/v1/deployments/${deploymentId}/shadow-report`);
    // Per run: c1 and c2 beforeToolCall, c1 and c2 afterToolCall (no shadow hook: proceed), beforeRun, beforeFinish.
    expect(report.body).toMatchObject({ runs: 2, calls: 12, agreed: 10, disagreed: { "proceed->deny": 2 } });
    expect(report.body.samples.map((s: { callId: string; hook: string }) => [s.callId, s.hook])).toEqual([
      ["c2", "beforeToolCall"],
      ["c2", "beforeToolCall"],
    ]);
  }, 120_000);

  it("shadow run hooks too: a shadow beforeRun that denies and a beforeFinish that continues change nothing, and are reported", async () => {
    await upload(
      "gate",
      "beforeRun() { return { action: 'deny', reason: 'shadow gate' }; }, beforeFinish() { return { action: 'continue', message: 'more' }; }",
    );
    const deploymentId = await deployShadows(["gate"]);
    const run = await runToEnd();
    expect(run.events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
    const shadowRunHooks = run.events.filter(
      (e): e is Decision => e.type === "hook-decision" && e.shadow === true && (e.hook === "beforeRun" || e.hook === "beforeFinish"),
    );
    expect(shadowRunHooks.map((d) => [d.hook, d.decision.action])).toEqual([
      ["beforeRun", "deny"],
      ["beforeFinish", "continue"],
    ]);
    const report = await acme().request("GET", `/v1/deployments/${deploymentId}/shadow-report`);
    expect(report.body).toMatchObject({ runs: 1, calls: 6, agreed: 4, disagreed: { "proceed->deny": 1, "proceed->continue": 1 } });
    expect(report.body.samples.map((s: { callId: string; hook: string; attempt: number }) => [s.callId, s.hook, s.attempt])).toEqual([
      ["run", "beforeRun", 1],
      ["run", "beforeFinish", 1],
    ]);
  }, 120_000);
});
