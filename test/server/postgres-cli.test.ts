import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { HookboxEvent } from "../../src/events/types.js";
import { jsonLines, runCli } from "../helpers/cli.js";
import { usePgServer } from "../helpers/postgres.js";
import { writeFixture } from "./fixture.js";
import { api, readEvents, startServe, useServeProcesses } from "./serve-process.js";

/*
 * The `hookbox` CLI on a PostgreSQL store (`--store postgres://...`, docs/cli.md): `run` keeps its session there,
 * `sessions` lists what a server and the CLI stored, and a run a server drained on SIGTERM (committed as
 * interrupted) is finished by `hookbox resume` without running its committed tool again.
 */

const pg = usePgServer();
const servers = useServeProcesses();

const logLines = (log: string) => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : []);

async function waitForLine(log: string, line: string) {
  const deadline = Date.now() + 30_000;
  while (!logLines(log).includes(line)) {
    if (Date.now() > deadline) throw new Error(`${line} never appeared in ${log}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function sessionsOf(url: string) {
  const listed = await runCli(["sessions", "--store", url, "--json"]);
  expect(listed.stderr).toBe("");
  expect(listed.code).toBe(0);
  return jsonLines(listed.stdout) as { id: string; tenant: string; runs: number; lastRun?: { status: string } }[];
}

describe("hookbox run, sessions and resume on a PostgreSQL store", () => {
  it("the help names the PostgreSQL store", async () => {
    for (const command of ["serve", "resume", "sessions", "run"]) {
      const help = await runCli([command, "--help"]);
      expect(help.stdout, command).toMatch(/--store FILE\|URL/);
      expect(help.stdout, command).toMatch(/postgres:\/\//);
    }
  });

  it("run keeps its session in the database; a drained server's run is listed interrupted and resume finishes it", async () => {
    const steps = [
      {
        toolCalls: [
          { id: "c1", name: "record", args: { id: "c1" } },
          { id: "c2", name: "record", args: { id: "c2", delayMs: 20_000 } },
        ],
      },
      { text: "done" },
    ];
    const url = await pg.createDatabase("hookbox_cli");
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps }], { store: url, server: { drainMs: 200, leaseMs: 2000 } });

    // hookbox run --store URL: one session, one run, to its end.
    const cliModel = join(fixture.dir, "cli-model.json");
    writeFileSync(
      cliModel,
      JSON.stringify({ steps: [{ toolCalls: [{ id: "k1", name: "record", args: { id: "k1" } }] }, { text: "cli done" }] }),
    );
    const ran = await runCli([
      "run",
      "--model",
      `scripted:${cliModel}`,
      "--host-tools",
      join(fixture.dir, "tools.mjs"),
      "--prompt",
      "record one",
      "--store",
      url,
      "--session",
      "cli-session",
      "--json",
    ]);
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    expect((jsonLines(ran.stdout) as HookboxEvent[]).at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "cli done" });

    // A served run drained on SIGTERM while its second tool runs: committed as interrupted.
    const server = await startServe({ config: fixture.config });
    servers.push(server);
    const client = api(server.url, "acme-key");
    const session = await client.request("POST", "/v1/sessions", {});
    const sessionId = session.body.sessionId as string;
    const runId = (await client.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both" })).body.runId as string;
    // Drained once c1's result is committed (its tool-finished is streamed: events are sent after their commit)
    // and c2's tool is running.
    let c1Finished = false;
    let c2Started = false;
    let drained = false;
    const stream = readEvents(server.url, "acme-key", runId, {
      onMessage: (m) => {
        if (m.event.type === "tool-finished" && m.event.callId === "c1") c1Finished = true;
        if (m.event.type === "tool-started" && m.event.callId === "c2") c2Started = true;
        if (!drained && c1Finished && c2Started) {
          drained = true;
          void waitForLine(fixture.log, `tool ${sessionId} c2`).then(() => server.child.kill("SIGTERM"));
        }
      },
    });
    const { messages } = await stream;
    const types = messages.map((m) => m.event.type);
    expect(types).toContain("tool-finished");
    expect(messages.at(-1)?.event).toMatchObject({ type: "run-interrupted", reason: expect.stringMatching(/SIGTERM/) });
    expect(await server.exited).toEqual({ code: 0, signal: null });

    const listed = await sessionsOf(url);
    expect(listed.find((s) => s.id === "cli-session")).toMatchObject({
      tenant: expect.any(String),
      runs: 1,
      lastRun: { status: "completed" },
    });
    expect(listed.find((s) => s.id === sessionId)).toMatchObject({ tenant: "acme", runs: 1, lastRun: { status: "interrupted" } });

    const resumed = await runCli(["resume", "--store", url, "--session", sessionId, "--config", fixture.config, "--json"]);
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    const after = jsonLines(resumed.stdout) as HookboxEvent[];
    expect(after[0]).toMatchObject({ type: "run-resumed", seq: messages.length + 1 });
    expect(after.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "done" });
    // c1 was committed before the drain: not run again; c2 had not committed: it ran again.
    const tools = logLines(fixture.log).filter((line) => line.startsWith(`tool ${sessionId} `));
    expect(tools.filter((line) => line.endsWith(" c1"))).toHaveLength(1);
    expect(tools.filter((line) => line.endsWith(" c2"))).toHaveLength(2);
    expect((await sessionsOf(url)).find((s) => s.id === sessionId)).toMatchObject({ lastRun: { status: "completed" } });
  }, 120_000);
});
