import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { usePgServer } from "../helpers/postgres.js";
import { writeFixture } from "./fixture.js";
import { api, readEvents, startServe, useServeProcesses, type SseMessage } from "./serve-process.js";

/*
 * PostgreSQL restarting (pg_ctl stop -m immediate, as a crash, then start on the same data) while runs are in
 * flight on `hookbox serve` processes that share it (docs/scale-out.md, "Faults"): no committed event is lost, a
 * reader that reconnects with Last-Event-ID sees one gap-free sequence, the run is interrupted and taken over once
 * the database is back, and it finishes with one run-finished; a tool whose result was committed does not run again.
 */

const LEASE_MS = 2000;
const pg = usePgServer();
const servers = useServeProcesses();

const readLog = (log: string) => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : []);

/** Reads the run's stream from `url` to its run-finished, reconnecting with Last-Event-ID whenever it drops. */
async function readToEnd(url: string, runId: string, options: { onMessage?: (message: SseMessage) => void } = {}) {
  const messages: SseMessage[] = [];
  const deadline = Date.now() + 90_000;
  while (messages.at(-1)?.event.type !== "run-finished") {
    if (Date.now() > deadline) throw new Error(`run ${runId} did not finish: ${JSON.stringify(messages.map((m) => m.event.type))}`);
    try {
      const read = await readEvents(url, "acme-key", runId, {
        ...(messages.length > 0 ? { lastEventId: messages.at(-1)!.id! } : {}),
        onMessage: (message) => {
          messages.push(message);
          options.onMessage?.(message);
        },
      });
      if (read.status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    } catch {
      // The stream (or the request) broke while the database was away: reconnect after a moment.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  return messages;
}

// Down for 5 s from c2's start, past the 2 s lease: c2's 3 s tool ends while the database is away (the stop itself
// takes well under those 3 s), so its result's commit fails, or its lease runs out first; either way the run is
// interrupted. Back at once: c2's tool (4 s) may end after the database is back, and the run may go on.
const cases = [
  { nodes: 2, delayMs: 3000, downMs: 5000, mustInterrupt: true, case: "down past the lease across c2's commit, read from the other node" },
  { nodes: 1, delayMs: 3000, downMs: 5000, mustInterrupt: true, case: "down past the lease across c2's commit, one node" },
  { nodes: 2, delayMs: 4000, downMs: 0, mustInterrupt: false, case: "back before c2's tool ends: the run goes on or is taken over" },
];

describe("PostgreSQL restarting under hookbox serve processes with a run in flight", () => {
  it.each(cases)(
    "loses no committed event and the run finishes once ($case)",
    async ({ nodes, delayMs, downMs, mustInterrupt }) => {
      const steps = [
        { toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] },
        { toolCalls: [{ id: "c2", name: "record", args: { id: "c2", delayMs } }] },
        { text: "both recorded" },
      ];
      const url = await pg.createDatabase("hookbox_cluster");
      const fixture = writeFixture([{ name: "acme", key: "acme-key", steps }], { store: url, server: { leaseMs: LEASE_MS } });
      for (let i = 0; i < nodes; i++) servers.push(await startServe({ config: fixture.config }));
      const [a, b] = [servers[0], servers.at(-1)!];
      const onA = api(a.url, "acme-key");
      const session = await onA.request("POST", "/v1/sessions", {});
      const sessionId = session.body.sessionId as string;
      const started = await onA.request("POST", `/v1/sessions/${sessionId}/runs`, { prompt: "record both" });
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      const runId = started.body.runId as string;

      // The database goes away while c2's tool runs on A (c1's result is committed by then).
      let restarted: Promise<void> | undefined;
      const messages = await readToEnd(b.url, runId, {
        onMessage: (m) => {
          if (!restarted && m.event.type === "tool-started" && m.event.callId === "c2") restarted = pg.restart({ downMs });
        },
      });
      expect(restarted, "c2 never started").toBeDefined();
      await restarted;
      for (const server of servers) expect(server.child.exitCode, `a node exited: ${server.stderr()}`).toBeNull();

      const events = messages.map((m) => m.event);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(messages.map((m) => m.id)).toEqual(events.map((e) => String(e.seq)));
      const types = events.map((e) => e.type);
      expect(types.filter((type) => type === "run-finished")).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
      // An interruption is followed by the takeover's run-resumed, and the run goes on from there.
      const interrupted = types.indexOf("run-interrupted");
      if (mustInterrupt) expect(interrupted, JSON.stringify(types)).toBeGreaterThan(0);
      if (interrupted >= 0) expect(events[interrupted + 1]).toMatchObject({ type: "run-resumed", node: expect.any(String) });
      expect(types.filter((type) => type === "run-interrupted")).toHaveLength(types.filter((type) => type === "run-resumed").length);
      // Everything the reader got is what the store keeps, read again from the start through every node.
      for (const server of servers) {
        const again = await readEvents(server.url, "acme-key", runId, { lastEventId: "0" });
        expect(again.messages.map((m) => m.event)).toEqual(events);
      }
      // c1's result was committed before the restart: it ran once. c2's may not have been: it may run again, once.
      const tools = readLog(fixture.log).filter((line) => line.startsWith("tool "));
      expect(tools.filter((line) => line === `tool ${sessionId} c1`)).toHaveLength(1);
      expect(tools.filter((line) => line === `tool ${sessionId} c2`).length).toBeGreaterThanOrEqual(1);
      expect(tools.filter((line) => line === `tool ${sessionId} c2`).length).toBeLessThanOrEqual(2);
      expect((await onA.request("GET", `/v1/runs/${runId}`)).body).toMatchObject({ status: "completed", epoch: interrupted >= 0 ? 2 : 1 });
      // Every node serves again.
      for (const server of servers) expect((await api(server.url, "acme-key").request("GET", "/healthz")).body).toMatchObject({ ok: true });
    },
    120_000,
  );
});
