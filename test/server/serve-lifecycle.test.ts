import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { runCli, jsonLines } from "../helpers/cli.js";
import { openStore } from "../../src/store/index.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { api, readEvents, startServe } from "./serve-process.js";
import { writeFixture } from "./fixture.js";
import { descendants, isRunning, waitUntil } from "./processes.js";

const policy = `import { defineScript } from "hookbox";
export default defineScript({ name: "policy", hooks: { afterToolCall(p) { return undefined; } } });
`;
const slowSteps = [
  {
    toolCalls: [
      { id: "c1", name: "record", args: { id: "c1" } },
      { id: "c2", name: "record", args: { id: "c2", delayMs: 20_000 } },
    ],
  },
  { text: "done" },
];
/** Tool results the store holds for a run (read beside the running server, as any reader of the file may). */
function committedToolResults(store: string, runId: string): number {
  const db = new DatabaseSync(store, { readOnly: true });
  try {
    return (db.prepare("SELECT COUNT(*) AS n FROM tool_results WHERE run_id = ?").get(runId) as { n: number }).n;
  } finally {
    db.close();
  }
}
const logLines = (log: string) => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : []);

async function startSlowRun(url: string) {
  const client = api(url, "acme-key");
  const {
    body: { sessionId },
  } = await client.request("POST", "/v1/sessions", {});
  const {
    status,
    body: { runId },
  } = await client.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both" });
  expect(status).toBe(202);
  return { sessionId: sessionId as string, runId: runId as string };
}

async function resumeToCompletion(store: string, sessionId: string, config: string) {
  const result = await runCli(["resume", "--store", store, "--session", sessionId, "--config", config, "--json"]);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return jsonLines(result.stdout) as HookboxEvent[];
}

describe("hookbox serve lifecycle", () => {
  it("drains on SIGTERM: the in-flight run is committed as interrupted and resumes to completion", async () => {
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: slowSteps }], { server: { drainMs: 200 } });
    const server = await startServe({ config: fixture.config, store: fixture.store });
    const { sessionId, runId } = await startSlowRun(server.url);
    await waitUntil(() => logLines(fixture.log).some((l) => l.endsWith(" c2") && l.startsWith("tool ")), 10_000, "the slow tool to start");
    // c1's result is committed (so the resume must not run it again), and the event stream is connected.
    await waitUntil(() => committedToolResults(fixture.store, runId) >= 1, 10_000, "c1's result to be committed");
    let connected!: () => void;
    const streaming = new Promise<void>((resolve) => (connected = resolve));
    const stream = readEvents(server.url, "acme-key", runId, { onMessage: () => connected() });
    await streaming;
    server.child.kill("SIGTERM");
    const { messages, ended } = await stream;
    expect(ended).toBe(true);
    expect(messages.at(-1)?.event).toMatchObject({ type: "run-interrupted", reason: expect.stringMatching(/SIGTERM/) });
    expect(await server.exited).toEqual({ code: 0, signal: null });

    const store = openStore(fixture.store);
    expect((await store.getRun(runId))?.status).toBe("interrupted");
    await store.close();
    const resumed = await resumeToCompletion(fixture.store, sessionId, fixture.config);
    expect(resumed.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "done" });
    expect(logLines(fixture.log).filter((l) => l.startsWith("tool ") && l.endsWith(" c1"))).toHaveLength(1);
  });

  it("survives SIGKILL of the server: no orphan sandbox workers, committed events intact, resumable", async () => {
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: slowSteps, scripts: { "policy.ts": policy } }]);
    const server = await startServe({ config: fixture.config, store: fixture.store });
    const { sessionId, runId } = await startSlowRun(server.url);
    const seen: HookboxEvent[] = [];
    void readEvents(server.url, "acme-key", runId, { onMessage: (m) => seen.push(m.event) }).catch(() => undefined);
    await waitUntil(
      () =>
        logLines(fixture.log).some((l) => l.endsWith(" c2") && l.startsWith("tool ")) &&
        seen.some((e) => e.type === "tool-started" && e.callId === "c2"),
      10_000,
      "the slow tool to start",
    );
    const workers = descendants(server.child.pid!);
    expect(workers.length).toBeGreaterThan(0);
    server.child.kill("SIGKILL");
    await server.exited;
    await waitUntil(
      () => workers.every((pid) => !isRunning(pid)),
      3000,
      `workers ${workers.join(", ")} to exit after the server was killed`,
    );

    const store = openStore(fixture.store);
    const stored = await store.listEvents(runId);
    expect(stored.slice(0, seen.length)).toEqual(seen);
    expect((await store.getRun(runId))?.status).toBe("interrupted");
    await store.close();
    const resumed = await resumeToCompletion(fixture.store, sessionId, fixture.config);
    expect(resumed.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
    expect(logLines(fixture.log).filter((l) => l.startsWith("tool ") && l.endsWith(" c1"))).toHaveLength(1);
  });

  it("keeps serving other tenants while one tenant's script loops forever", async () => {
    const hostile = `import { defineScript } from "hookbox";
export default defineScript({ name: "hostile", hooks: { beforeToolCall(p) { for (;;) {} } } });
`;
    const steps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] }, { text: "done" }];
    const fixture = writeFixture([
      { name: "evil", key: "evil-key", steps, scripts: { "hostile.ts": hostile }, limits: { cpuMs: 100, wallMs: 500 } },
      { name: "good", key: "good-key", steps, scripts: { "policy.ts": policy } },
    ]);
    const server = await startServe({ config: fixture.config, store: fixture.store });
    try {
      const evil = api(server.url, "evil-key");
      const evilRuns = [];
      for (let i = 0; i < 3; i++) {
        const {
          body: { sessionId },
        } = await evil.request("POST", "/v1/sessions", {});
        evilRuns.push((await evil.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "loop" })).body.runId as string);
      }
      const good = api(server.url, "good-key");
      const goodRuns = await Promise.all(
        Array.from({ length: 5 }, async () => {
          const {
            body: { sessionId },
          } = await good.request("POST", "/v1/sessions", {});
          const {
            body: { runId },
          } = await good.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "work" });
          return readEvents(server.url, "good-key", runId);
        }),
      );
      for (const run of goodRuns) expect(run.messages.at(-1)?.event).toMatchObject({ type: "run-finished", status: "completed" });
      for (const runId of evilRuns) {
        const { messages } = await readEvents(server.url, "evil-key", runId);
        const hook = messages.find((m) => m.event.type === "hook-decision" && m.event.script === "hostile");
        expect(JSON.stringify(hook?.event)).toMatch(/SANDBOX_TIMEOUT/);
        expect(messages.some((m) => m.event.type === "tool-started")).toBe(false); // fail-closed: the tool did not run
      }
      expect((await api(server.url, undefined).request("GET", "/healthz")).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});
