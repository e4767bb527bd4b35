import { describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { jsonLines, repoRoot, runCli } from "../helpers/cli.js";
import { tmp, writeSteps } from "../helpers/harness.js";

const tools = join(repoRoot, "test/fixtures/cli/regression-tools.mjs");
const runArgs = (steps: Parameters<typeof writeSteps>[0], ...extra: string[]) => [
  "run",
  "--model",
  `scripted:${writeSteps(steps)}`,
  "--host-tools",
  tools,
  "--prompt",
  "x",
  "--json",
  ...extra,
];

describe("hookbox run regressions", () => {
  it("a session's second run whose model reuses a call id from the first run still runs that call", async () => {
    const store = join(tmp(), "store.db");
    const steps = [{ toolCalls: [{ id: "c1", name: "echo", args: { text: "again" } }] }, { text: "done" }];
    const first = await runCli(runArgs(steps, "--store", store));
    expect(first.code).toBe(0);
    const sessionId = jsonLines(first.stdout)[0].sessionId as string;

    const second = await runCli(runArgs(steps, "--store", store, "--session", sessionId));
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    const events = jsonLines(second.stdout);
    expect(events.filter((e) => e.type === "inference-finished").map((e) => e.toolCalls.length)).toEqual([1, 0]);
    expect(events.filter((e) => e.type === "tool-finished")).toMatchObject([{ callId: "c1", result: { echoed: "again" } }]);
  });

  it("a model that numbers calls per response (c1 in every response) gets each call run within one run", async () => {
    const steps = [
      { toolCalls: [{ id: "c1", name: "echo", args: { text: "one" } }] },
      { toolCalls: [{ id: "c1", name: "echo", args: { text: "two" } }] },
      { text: "done" },
    ];
    const r = await runCli(runArgs(steps, "--store", join(tmp(), "store.db")));
    expect(r.code).toBe(0);
    const results = jsonLines(r.stdout).filter((e) => e.type === "tool-finished");
    expect(results.map((e) => e.result)).toEqual([{ echoed: "one" }, { echoed: "two" }]);
  });

  it("exits once the run finished even while a host tool that ignored its abort signal still sleeps", async () => {
    // The tool sleeps 10 minutes on a timer that keeps the event loop alive: a CLI that waited for it would never
    // exit within the test's time, and one that exits before it wakes finds no file it writes on waking.
    const woke = join(tmp(), "woke");
    const steps = [{ toolCalls: [{ id: "c1", name: "stubborn_sleep", args: { ms: 600_000, wokeFile: woke } }] }, { text: "done" }];
    const r = await runCli(runArgs(steps, "--tool-timeout-ms", "200"));
    expect(r.code).toBe(0);
    expect(existsSync(woke)).toBe(false);
    const events = jsonLines(r.stdout);
    expect(events.find((e) => e.type === "tool-finished")).toMatchObject({ error: { code: "TOOL_TIMEOUT" } });
    expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
  }, 60_000);

  it("no tool-started for a call whose arguments fail validation; the model sees the error", async () => {
    const steps = [{ toolCalls: [{ id: "bad", name: "typed", args: { n: "seven" } }] }, { text: "done" }];
    const r = await runCli(runArgs(steps));
    expect(r.code).toBe(0);
    const events = jsonLines(r.stdout);
    expect(events.filter((e) => e.type === "tool-started")).toEqual([]);
    expect(events.find((e) => e.type === "tool-finished")).toMatchObject({ callId: "bad", error: { code: "TOOL_ARGS" } });
  });

  it("a valid call still gets tool-started then tool-finished", async () => {
    const r = await runCli(runArgs([{ toolCalls: [{ id: "ok", name: "typed", args: { n: 2 } }] }, { text: "done" }]));
    const events = jsonLines(r.stdout).filter((e) => e.type.startsWith("tool-"));
    expect(events.map((e) => e.type)).toEqual(["tool-started", "tool-finished"]);
    expect(events[1]).toMatchObject({ result: { doubled: 4 } });
  });

  it("ids have one format with and without a store: sess_<hex>, run_<hex>, inf_<hex>", async () => {
    const steps = [{ text: "done" }];
    for (const extra of [[], ["--store", join(tmp(), "store.db")]]) {
      const events = jsonLines((await runCli(runArgs(steps, ...extra))).stdout);
      expect(events[0].sessionId).toMatch(/^sess_[0-9a-f]{32}$/);
      expect(events[0].runId).toMatch(/^run_[0-9a-f]{32}$/);
      expect(events[0].inferenceId).toMatch(/^inf_[0-9a-f]{32}$/);
    }
  });
});
