import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, writeFileSync, openSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";
import { runToEnd } from "./redteam-server.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * The store's filesystem fills up under a real `hookbox serve`: the store lives on a 4 MiB tmpfs mounted for
 * this test, a filler file takes the rest. Writes must answer 507 STORE_FULL (never the 500 of a server bug),
 * reads go on, and once space is freed everything works again on a store that stayed whole.
 */

let mountPoint: string;
let server: ServeProcess | undefined;

beforeAll(() => {
  if (process.getuid?.() !== 0)
    throw new Error("this test fills a real filesystem: it mounts a small tmpfs, which needs root (CI runs as root)");
  mountPoint = mkdtempSync(join(tmpdir(), "hookbox-full-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint]);
});
afterAll(async () => {
  await server?.stop();
  if (mountPoint) {
    execFileSync("umount", ["-l", mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  }
});

/** Writes zeros to `file` until the filesystem refuses (ENOSPC). */
function fill(file: string): void {
  const fd = openSync(file, "w");
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    closeSync(fd);
  }
}

describe("a full store filesystem", () => {
  it("answers writes 507 STORE_FULL, keeps reads working, and works again once space is freed", async () => {
    const slowSteps = [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1", delayMs: 1500 } }] }, { text: "late" }];
    const fixture = writeFixture([
      { name: "acme", key: "acme-key", steps: twoToolSteps },
      { name: "slow", key: "slow-key", steps: slowSteps },
    ]);
    const store = join(mountPoint, "store.db");
    server = await startServe({ config: fixture.config, store });
    const client = api(server.url, "acme-key");
    const before = await runToEnd(server.url, "acme-key");
    expect(before.final).toMatchObject({ status: "completed" });

    // A run in flight when the disk fills: its next writes fail; its stream must still end.
    const slow = api(server.url, "slow-key");
    const { body: slowSession } = await slow.request("POST", "/v1/sessions", {});
    const inFlight = await slow.request("POST", `/v1/sessions/${slowSession.sessionId}/runs`, { prompt: "wait" });
    expect(inFlight.status).toBe(202);
    await readEvents(server.url, "slow-key", inFlight.body.runId, { stopWhen: (m) => m.event.type === "tool-started" });
    const inFlightStream = readEvents(server.url, "slow-key", inFlight.body.runId);

    const filler = join(mountPoint, "filler");
    fill(filler);
    expect(statfsSync(mountPoint).bavail).toBe(0);
    // SQLite may still fit a few writes into pages it already has: write until the filesystem says no.
    const statuses: number[] = [];
    let refused: { status: number; body: any } | undefined;
    for (let attempt = 0; attempt < 40 && !refused; attempt++) {
      const created = await client.request("POST", "/v1/sessions", { defaults: { tags: { pad: "x".repeat(200) } } });
      statuses.push(created.status);
      if (created.status !== 201) {
        refused = created;
        break;
      }
      const started = await client.request("POST", `/v1/sessions/${created.body.sessionId}/runs`, { prompt: "p".repeat(90_000) });
      statuses.push(started.status);
      if (started.status !== 202) refused = started;
    }
    expect(statuses.filter((status) => status >= 500 && status !== 507)).toEqual([]);
    expect(refused, `statuses ${statuses.join(",")}`).toBeDefined();
    expect(refused).toMatchObject({ status: 507, body: { error: { code: "STORE_FULL", message: expect.stringMatching(/full/) } } });
    expect(refused!.body.error.message).not.toContain(mountPoint);

    const ended = await inFlightStream;
    expect(ended.ended).toBe(true);
    expect(ended.messages.at(-1)?.event).toMatchObject({ type: "run-finished", status: "failed", errorCode: "STORE_FULL" });

    // Reads go on: the list, a stored run and its whole event stream.
    expect((await client.request("GET", "/v1/sessions")).status).toBe(200);
    expect((await client.request("GET", `/v1/runs/${before.runId}`)).body).toMatchObject({ status: "completed" });
    const replayed = await readEvents(server.url, "acme-key", before.runId);
    expect(replayed.messages.map((m) => m.event)).toEqual(before.events);

    rmSync(filler);
    // Once there is room, the stored run ends as its readers saw it end.
    await expect
      .poll(async () => (await slow.request("GET", `/v1/runs/${inFlight.body.runId}`)).body, { timeout: 15_000 })
      .toMatchObject({ status: "failed", errorCode: "STORE_FULL" });
    expect((await readEvents(server.url, "slow-key", inFlight.body.runId)).messages.at(-1)?.event).toMatchObject({
      type: "run-finished",
      errorCode: "STORE_FULL",
    });
    const after = await runToEnd(server.url, "acme-key");
    expect(after.final).toMatchObject({ status: "completed", text: "both recorded" });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(server.stderr()).not.toMatch(/fault-\d+/);
    await server.stop();
    server = undefined;

    const db = new DatabaseSync(store);
    expect(db.prepare("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    db.close();
    writeFileSync(join(mountPoint, "done"), "");
  });
});
