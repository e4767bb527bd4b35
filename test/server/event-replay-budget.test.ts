import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServe, type ServeProcess } from "./serve-process.js";
import { runToEnd } from "./redteam-server.js";
import { twoToolSteps, writeFixture } from "./fixture.js";

/*
 * Reconnecting to a big stored run with `Last-Event-ID: 0` makes the server read and send all of it again.
 * Those replayed events are charged to the tenant (eventReplayBytesPerMinute): past the budget its streams slow
 * down, so reconnect loops get a bounded number of bytes and another tenant's runs keep their latency.
 */

let server: ServeProcess;
const MIB = 1024 * 1024;
const BUDGET = 8 * MIB;
/** Eight tool results of ~900 KB: a stored run of about 7 MB. */
const bigSteps = [
  { toolCalls: Array.from({ length: 8 }, (_, i) => ({ id: `b${i}`, name: "blob", args: { chars: 900_000 } })) },
  { text: "hoarded" },
];

beforeAll(async () => {
  const fixture = writeFixture([
    {
      name: "hoarder",
      key: "hoarder-key",
      steps: bigSteps,
      limits: { maxTurnBytes: 32 * MIB, maxRunBytes: 32 * MIB, eventReplayBytesPerMinute: BUDGET },
      extra: { hostTools: "big-tools.mjs" },
    },
    { name: "victim", key: "victim-key", steps: twoToolSteps },
  ]);
  writeFileSync(
    join(fixture.dir, "big-tools.mjs"),
    `export default [{ name: "blob", description: "A big result", parameters: { type: "object", properties: { chars: { type: "number" } } },
      handler: (args) => ({ data: "x".repeat(args.chars) }) }];\n`,
  );
  server = await startServe({ config: fixture.config, store: fixture.store });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function victimRunMs(count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    expect((await runToEnd(server.url, "victim-key")).final).toMatchObject({ status: "completed" });
    times.push(performance.now() - started);
  }
  return times;
}

/** Reconnects to the run from its start, again and again, until stopped; counts the bytes received. */
function reconnectLoop(runId: string): { stop(): Promise<number> } {
  const controller = new AbortController();
  let bytes = 0;
  const loop = (async () => {
    while (!controller.signal.aborted) {
      try {
        const response = await fetch(`${server.url}/v1/runs/${runId}/events`, {
          headers: { authorization: "Bearer hoarder-key", "last-event-id": "0" },
          signal: controller.signal,
        });
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
      } catch {
        /* stopped */
      }
    }
  })();
  return {
    async stop() {
      controller.abort();
      await loop;
      return bytes;
    },
  };
}

describe("replaying a big run's events", () => {
  it("charges replayed events to the tenant: 16 reconnect loops get about its budget, and another tenant keeps its latency", async () => {
    const big = await runToEnd(server.url, "hoarder-key");
    expect(big.final).toMatchObject({ status: "completed" });
    const runBytes = big.events.reduce((sum, event) => sum + JSON.stringify(event).length, 0);
    expect(runBytes).toBeGreaterThan(6 * MIB);

    await victimRunMs(1); // warm
    const baseline = median(await victimRunMs(5));
    const started = performance.now();
    const loops = Array.from({ length: 16 }, () => reconnectLoop(big.runId));
    const during = median(await victimRunMs(5));
    const received = (await Promise.all(loops.map((loop) => loop.stop()))).reduce((a, b) => a + b, 0);
    const minutes = (performance.now() - started) / 60_000;

    // What the budget allows: a full bucket (less what reading the run once took), the refill, one page of
    // overdraft (1 MiB), and SSE framing; unpaced, 16 loops read hundreds of megabytes.
    expect(received).toBeLessThan(BUDGET * (1 + minutes) + 2 * MIB);
    expect(during, `baseline ${Math.round(baseline)} ms`).toBeLessThan(3 * baseline + 1000);
  }, 120_000);
});
