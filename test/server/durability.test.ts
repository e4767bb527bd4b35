import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startCli, jsonLines } from "../helpers/cli.js";
import { openStore } from "../../src/store/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { writeFixture } from "./fixture.js";
import { descendants, isRunning, waitUntil } from "./processes.js";

/*
 * Real processes, real SIGKILL: `hookbox run --store` is killed at a chosen point of a run; the store is
 * reopened, every event the process printed (printed only after it was committed) is there intact, the run
 * is `interrupted`, no sandbox worker outlived it, and `hookbox resume` finishes the run, never executing
 * a tool whose result was committed and re-running beforeToolCall for calls that had not executed.
 */

const policy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: { afterToolCall(p) { return undefined; } } });
`;

interface Scenario {
  name: string;
  steps: unknown[];
  step?: boolean;
  /** True when the process should be killed. */
  killWhen(state: { events: HookboxEvent[]; log: string[] }): boolean;
  expectCounts: Record<string, number>;
}

const call = (id: string, args: Record<string, unknown> = {}) => ({ id, name: "record", args: { id, ...args } });

const scenarios: Scenario[] = [
  {
    name: "during inference",
    steps: [{ delayMs: 1500, toolCalls: [call("c1"), call("c2")] }, { text: "done" }],
    killWhen: ({ events }) => events.some((e) => e.type === "inference-started"),
    expectCounts: { "tool c1": 1, "tool c2": 1, "before c1": 1, "before c2": 1 },
  },
  {
    name: "during a hook",
    steps: [{ toolCalls: [call("c1"), call("c2", { hookDelayMs: 10_000 })] }, { text: "done" }],
    killWhen: ({ log }) => log.some((l) => l.endsWith(" c2") && l.startsWith("before ")),
    // c1 was committed: not executed again, its hook not re-run; c2's beforeToolCall runs again.
    expectCounts: { "tool c1": 1, "tool c2": 1, "before c1": 1, "before c2": 2 },
  },
  {
    name: "during a tool",
    steps: [{ toolCalls: [call("c1"), call("c2", { delayMs: 10_000 })] }, { text: "done" }],
    killWhen: ({ log }) => log.some((l) => l.startsWith("tool ") && l.endsWith(" c2")),
    // c2 had started but its result was not committed: it runs again (after its hook runs again).
    expectCounts: { "tool c1": 1, "tool c2": 2, "before c1": 1, "before c2": 2 },
  },
  {
    name: "while paused",
    step: true,
    steps: [{ toolCalls: [call("c1"), call("c2")] }, { text: "done" }],
    killWhen: ({ events }) => events.some((e) => e.type === "debugger.pause"),
    expectCounts: { "tool c1": 1, "tool c2": 1, "before c1": 1, "before c2": 1 },
  },
];

function counts(log: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of log) {
    const [kind, , id] = line.split(" ");
    out[`${kind} ${id}`] = (out[`${kind} ${id}`] ?? 0) + 1;
  }
  return out;
}

describe("durability under SIGKILL", () => {
  it.each(scenarios)("hookbox run --store killed $name: committed state intact, interrupted, resumed to completion", async (scenario) => {
    const fixture = writeFixture([{ name: "acme", key: "k", steps: scenario.steps, scripts: { "policy.ts": policy } }]);
    const sessionId = `s-${scenario.name.replace(/\W+/g, "-")}`;
    const readLog = () => (existsSync(fixture.log) ? readFileSync(fixture.log, "utf8").trim().split("\n").filter(Boolean) : []);
    const args = [
      "run",
      join(fixture.dir, "policy.ts"),
      "--model",
      `scripted:${join(fixture.dir, "acme-model.json")}`,
      "--host-tools",
      join(fixture.dir, "tools.mjs"),
      "--prompt",
      "record both",
      "--store",
      fixture.store,
      "--session",
      sessionId,
      "--json",
      "--max-parallel-tools",
      "1",
      ...(scenario.step ? ["--step"] : []),
    ];
    const run = startCli(args);
    let stdout = "";
    run.child.stdout.on("data", (d) => (stdout += d));
    const printed = () => jsonLines(stdout.slice(0, stdout.lastIndexOf("\n") + 1)) as HookboxEvent[];
    let exited = false;
    void run.done.then(() => (exited = true));
    await waitUntil(() => exited || scenario.killWhen({ events: printed(), log: readLog() }), 20_000, `kill point "${scenario.name}"`);
    if (exited) throw new Error(`hookbox run ended before the kill point: ${JSON.stringify(await run.done)}`);
    const workers = descendants(run.child.pid!);
    expect(workers.length).toBeGreaterThan(0); // the sandbox worker(s) serving policy.ts
    run.child.kill("SIGKILL");
    await run.done;
    const beforeKill = printed();
    await waitUntil(
      () => workers.every((pid) => !isRunning(pid)),
      3000,
      `sandbox workers ${workers.join(", ")} to exit after their supervisor was killed`,
    );

    const store = openStore(fixture.store);
    try {
      const [runRecord] = await store.listRuns(sessionId);
      expect(runRecord).toMatchObject({ status: "interrupted" });
      const stored = await store.listEvents(runRecord.id);
      expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
      expect(stored.slice(0, beforeKill.length)).toEqual(beforeKill);
      expect(stored.at(-1)).toMatchObject({ type: "run-interrupted" });
      const snapshots = await store.listSnapshots(runRecord.id);
      expect(snapshots.length).toBeGreaterThan(0);
      for (const snapshot of snapshots) expect(snapshot.turn.blocks.length).toBeGreaterThan(0);
      expect(await store.openPauses(runRecord.id)).toEqual([]);
    } finally {
      await store.close();
    }

    const resume = startCli(["resume", "--store", fixture.store, "--session", sessionId, "--json"]);
    let resumed = "";
    resume.child.stdout.on("data", (d: Buffer) => {
      resumed += d;
      for (const event of jsonLines(resumed.slice(0, resumed.lastIndexOf("\n") + 1)) as HookboxEvent[]) {
        if (event.type === "debugger.pause" && !resumed.includes(`"continued-${event.pauseId}"`)) {
          resumed = resumed.replace(`"pauseId":"${event.pauseId}"`, `"pauseId":"${event.pauseId}","continued-${event.pauseId}":1`);
          resume.child.stdin.write(`${JSON.stringify({ continue: event.pauseId })}\n`);
        }
      }
    });
    const result = await resume.done;
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const after = jsonLines(result.stdout) as HookboxEvent[];
    expect(after[0].seq).toBe(stored_last_seq(beforeKill, after));
    expect(after.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "done" });
    expect(counts(readLog())).toEqual(scenario.expectCounts);

    const reopened = openStore(fixture.store);
    const events = await reopened.listEvents((await reopened.listRuns(sessionId))[0].id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    await reopened.close();
  });
});

/** The resumed run's first seq follows the stored interrupted end (which follows what was printed). */
function stored_last_seq(beforeKill: HookboxEvent[], after: HookboxEvent[]): number {
  expect(after[0].seq).toBeGreaterThan((beforeKill.at(-1)?.seq ?? 0) + 1);
  return after[0].seq;
}
