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

describe("shadow scripts", () => {
  it("record their decisions and failures as shadow events and in the report, and never change or stall the run", async () => {
    await upload("allow", "beforeToolCall() { return { action: 'proceed' }; }");
    const strict = await upload(
      "strict",
      "beforeToolCall(p) { if (p.call.id === 'c2') return { action: 'deny', reason: 'strict says no' }; }",
    );
    // fail-open, so each shadow chain goes on past them to the next script.
    await upload(
      "thrower",
      "beforeToolCall() { throw new Error('shadow broke'); }, afterToolCall() { throw new Error('after broke'); }",
      "fail-open",
    );
    await upload("bomber", "beforeToolCall() { const a = []; for (;;) a.push(new Array(1e6).fill(a.length)); }", "fail-open");
    await upload("looper", "beforeToolCall() { for (;;) {} }", "fail-open");
    const deployed = await acme().request("PUT", "/v1/deployment", {
      scripts: [{ name: "allow", version: 1 }],
      shadow: ["thrower", "bomber", "looper", "strict"].map((name) => ({ name, version: 1 })),
    });
    expect(deployed.status).toBe(200);

    const run = await runToEnd();
    const finished = run.events.at(-1)!;
    expect(finished).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
    const executed = readFileSync(log, "utf8")
      .split("\n")
      .filter((line) => line.startsWith(`tool ${run.sessionId} `));
    expect(executed).toHaveLength(2);
    // Shadows settle within their own wall limit per shadow script (plus a margin); generous for a loaded machine.
    expect(run.ms).toBeLessThan(WALL_MS * 4 + 1000 + 10_000);

    const decisions = run.events.filter((e): e is Decision => e.type === "hook-decision");
    const active = decisions.filter((d) => !d.shadow);
    const shadow = decisions.filter((d) => d.shadow);
    expect(active.filter((d) => d.script !== "count-hooks").every((d) => d.script === "allow" && d.decision.action === "proceed")).toBe(
      true,
    );
    expect(shadow.every((d) => ["strict", "looper", "thrower", "bomber"].includes(d.script) && d.version === 1 && d.bundleHash)).toBe(true);
    expect(shadow.find((d) => d.script === "strict" && d.callId === "c2")).toMatchObject({
      decision: { action: "deny", reason: "strict says no" },
      bundleHash: strict.bundleHash,
    });
    const errorOf = (script: string) => shadow.filter((d) => d.script === script).map((d) => d.decision.code);
    expect(errorOf("thrower")).toEqual(["SCRIPT_ERROR", "SCRIPT_ERROR", "SCRIPT_ERROR", "SCRIPT_ERROR"]);
    expect(errorOf("bomber")).toHaveLength(2);
    // The bomb is stopped by whichever sandbox limit trips first on this machine: memory, or the CPU time V8 spends collecting.
    const contained: unknown[] = ["SANDBOX_MEMORY", "SANDBOX_TIMEOUT", "SANDBOX_CRASHED"];
    expect(
      errorOf("bomber").every((code) => contained.includes(code)),
      JSON.stringify(errorOf("bomber")),
    ).toBe(true);
    expect(errorOf("looper")).toHaveLength(2);
    expect(errorOf("looper").every((code) => code === "SANDBOX_TIMEOUT" || code === "SANDBOX_CRASHED")).toBe(true);
    expect(run.events.filter((e) => e.type === "log")).toEqual([]);
    // No shadow log lines, no denial the model saw.
    const c2 = run.events.find((e) => e.type === "tool-finished" && e.callId === "c2");
    expect(c2).toMatchObject({ result: { recorded: "c2" } });

    const report = await acme().request("GET", `/v1/deployments/${deployed.body.deploymentId}/shadow-report`);
    expect(report.status).toBe(200);
    // The failing shadows are fail-open, so each chain reaches strict: only c2's beforeToolCall disagrees. The
    // run hooks' chains (one beforeRun, one beforeFinish) agree.
    expect(report.body).toMatchObject({
      deploymentId: deployed.body.deploymentId,
      runs: 1,
      calls: 6,
      agreed: 5,
      disagreed: { "proceed->deny": 1 },
    });
    expect(report.body.samples).toEqual([
      expect.objectContaining({ runId: run.runId, callId: "c2", hook: "beforeToolCall", active: "proceed", shadow: "deny" }),
    ]);
  }, 120_000);

  it("reports agreement and each disagreement by its transition", async () => {
    await upload("strict2", "beforeToolCall(p) { if (p.call.id === 'c2') return { action: 'deny', reason: 'no' }; }");
    const deployed = await acme().request("PUT", "/v1/deployment", {
      scripts: [{ name: "allow", version: 1 }],
      shadow: [{ name: "strict2", version: 1 }],
    });
    const first = await runToEnd();
    const second = await runToEnd();
    for (const run of [first, second]) expect(run.events.at(-1)).toMatchObject({ status: "completed" });
    const report = await acme().request("GET", `/v1/deployments/${deployed.body.deploymentId}/shadow-report`);
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
    const deployed = await acme().request("PUT", "/v1/deployment", {
      scripts: [{ name: "allow", version: 1 }],
      shadow: [{ name: "gate", version: 1 }],
    });
    const run = await runToEnd();
    expect(run.events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
    const shadowRunHooks = run.events.filter(
      (e): e is Decision => e.type === "hook-decision" && e.shadow === true && (e.hook === "beforeRun" || e.hook === "beforeFinish"),
    );
    expect(shadowRunHooks.map((d) => [d.hook, d.decision.action])).toEqual([
      ["beforeRun", "deny"],
      ["beforeFinish", "continue"],
    ]);
    const report = await acme().request("GET", `/v1/deployments/${deployed.body.deploymentId}/shadow-report`);
    expect(report.body).toMatchObject({ runs: 1, calls: 6, agreed: 4, disagreed: { "proceed->deny": 1, "proceed->continue": 1 } });
    expect(report.body.samples.map((s: { callId: string; hook: string; attempt: number }) => [s.callId, s.hook, s.attempt])).toEqual([
      ["run", "beforeRun", 1],
      ["run", "beforeFinish", 1],
    ]);
  }, 120_000);
});
