// The floor under http_cpu_ms_per_run: the same three requests per run as the bench's clients make (create a
// session, start a run, read its events over SSE to the end), answered by a bare Hono app on @hono/node-server
// (hookbox's HTTP stack) that does nothing else: the SSE stream writes the same number of events of the same
// size, taken from a stored run of the bench's workload. What serve spends per run above this is hookbox's own
// work (auth, validation, the loop, the sandbox's IPC, the store). Prints one JSON object.
// node scripts/bench/http-floor.mjs [--clients N] [--runs-per-client N] [--events N]
import { fork } from "node:child_process";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { cpuMs } from "./proc-cpu.mjs";
import { percentile, round } from "./http-workload.mjs";

const EVENT = JSON.stringify({
  type: "tool-finished",
  callId: "c1",
  name: "lookup",
  attempt: 1,
  durationMs: 0.4,
  result: { id: "A17", total: 120 },
  seq: 9,
  timestampMs: 1795606050268,
  sessionId: "sess_61a97d7be4494f829d3205bec32e5ef4",
  inferenceId: "inf_49d4c0733c944b97955449b439dac093",
});

if (process.argv[2] === "--serve") {
  const { Hono } = await import("hono");
  const { streamSSE } = await import("hono/streaming");
  const { serve } = await import("@hono/node-server");
  const events = Number(process.argv[3]);
  const app = new Hono();
  let n = 0;
  app.post("/v1/sessions", async (c) => {
    await c.req.text();
    return c.json({ sessionId: `sess_${++n}` }, 201);
  });
  app.post("/v1/sessions/:id/runs", async (c) => {
    await c.req.json();
    return c.json({ runId: `run_${++n}`, inferenceId: "inf" }, 202);
  });
  app.get("/v1/runs/:id/events", (c) =>
    streamSSE(c, async (stream) => {
      for (let seq = 1; seq <= events; seq++) {
        const last = seq === events;
        await stream.writeSSE({
          id: String(seq),
          data: last ? EVENT.replace('"tool-finished"', '"run-finished","status":"completed"') : EVENT,
        });
        if (seq % 4 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    }),
  );
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => process.send({ port: info.port }));
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
} else {
  const { values } = parseArgs({
    options: { clients: { type: "string" }, "runs-per-client": { type: "string" }, events: { type: "string" } },
  });
  const clients = Number(values.clients ?? 50);
  const runsPerClient = Number(values["runs-per-client"] ?? 20);
  const child = fork(fileURLToPath(import.meta.url), ["--serve", values.events ?? "22"]);
  const port = await new Promise((resolve) => child.once("message", (m) => resolve(m.port)));
  const url = `http://127.0.0.1:${port}`;
  const headers = { authorization: "Bearer bench-key", "content-type": "application/json" };
  const oneRun = async () => {
    const started = performance.now();
    const session = await (await fetch(`${url}/v1/sessions`, { method: "POST", headers, body: "{}" })).json();
    const run = await (
      await fetch(`${url}/v1/sessions/${session.sessionId}/runs`, { method: "POST", headers, body: '{"prompt":"Refund A17"}' })
    ).json();
    const text = await (await fetch(`${url}/v1/runs/${run.runId}/events`, { headers })).text();
    if (!text.includes('"run-finished"')) throw new Error("no run-finished");
    return performance.now() - started;
  };
  await Promise.all(Array.from({ length: 10 }, oneRun));
  const before = cpuMs(child.pid);
  const begin = performance.now();
  const latencies = [];
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = 0; i < runsPerClient; i++) latencies.push(await oneRun());
    }),
  );
  const seconds = (performance.now() - begin) / 1000;
  const cpu = (cpuMs(child.pid) - before) / latencies.length;
  latencies.sort((a, b) => a - b);
  child.kill("SIGTERM");
  process.stdout.write(
    `${JSON.stringify({ http_floor_runs_per_s: round(latencies.length / seconds), http_floor_cpu_ms_per_run: round(cpu, 3), http_floor_p99_ms: round(percentile(latencies, 99)) })}\n`,
  );
}
