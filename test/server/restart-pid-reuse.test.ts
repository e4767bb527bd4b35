import { afterEach, describe, expect, it } from "vitest";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * A server that is PID 1 in a container restarts after `kill -9` with the same pid. Its predecessor's runs
 * name that pid as their owner; they must still be recovered (interrupted, then resumable), not taken for the
 * new server's own. The restart is simulated exactly: before the new server execs, the store's rows are made
 * to name the pid it is about to have, keeping the dead server's process instance.
 */

let servers: ServeProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.stop("SIGKILL")));
  servers = [];
});

describe("a restart that gets its predecessor's pid", () => {
  it("recovers the runs the killed server owned: interrupted, resumable, cancellable, and the stream ends", async () => {
    const fixture = writeFixture([{ name: "acme", key: "acme-key", steps: twoToolSteps }]);
    const first = await startServe({ config: fixture.config, store: fixture.store });
    servers.push(first);
    const client = api(first.url, "acme-key");
    const { body: session } = await client.request("POST", "/v1/sessions", {});
    const started = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "record both", step: true });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    await readEvents(first.url, "acme-key", runId, { stopWhen: (m) => m.event.type === "debugger.pause" });
    first.child.kill("SIGKILL");
    await first.exited;

    // The new server's pid is the shell's ($$) once it execs: the row now names it, as PID 1's would.
    const second = await startServe({
      config: fixture.config,
      store: fixture.store,
      env: { HOOKBOX_TEST_STORE: fixture.store },
      shellPrelude: `"$0" -e '
        const { DatabaseSync } = require("node:sqlite");
        const db = new DatabaseSync(process.env.HOOKBOX_TEST_STORE);
        const changed = db.prepare("UPDATE runs SET owner_pid = ? WHERE status = ?").run(Number(process.argv[1]), "running").changes;
        if (changed !== 1) throw new Error("expected one running run, found " + changed);
        db.close();
      ' $$ || exit 97`,
    });
    servers.push(second);
    const again = api(second.url, "acme-key");
    const run = await again.request("GET", `/v1/runs/${runId}`);
    expect(run.body).toMatchObject({ status: "interrupted" });

    const resumed = await again.request("POST", `/v1/sessions/${session.sessionId}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(202);
    expect(resumed.body.runId).toBe(runId);
    const stream = readEvents(second.url, "acme-key", runId, { lastEventId: "0" });
    const cancelled = await again.request("POST", `/v1/runs/${runId}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    const { messages, ended } = await stream;
    expect(ended).toBe(true);
    const ends = messages.filter((m) => m.event.type.startsWith("run-") && m.event.type !== "run-started").map((m) => m.event.type);
    expect(ends).toEqual(["run-interrupted", "run-resumed", "run-finished"]);
    expect(messages.at(-1)?.event).toMatchObject({ type: "run-finished", status: "cancelled" });
  });
});
