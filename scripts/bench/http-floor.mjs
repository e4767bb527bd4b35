// The floor under http_cpu_ms_per_run: the same three requests per run as the bench's clients make (create a
// session, start a run, read its events over SSE to the end), answered by a bare Hono app on @hono/node-server
// (hookbox's HTTP stack) that does nothing else: the SSE stream writes the same number of events of the same
// size, taken from a stored run of the bench's workload. What serve spends per run above this is hookbox's own
// work (auth, validation, the loop, the sandbox's IPC, the store). Prints one JSON object.
// With --lean, the app does what serve does since issue 26 instead of hono's helpers: a request body read from
// Node's IncomingMessage (src/server/request-body.ts), and the SSE messages of a turn written as one chunk of a
// ReadableStream (src/server/sse-body.ts), in place of c.req.json() and streamSSE. With --direct, as --lean, but
// the SSE messages of a turn are written to Node's response itself, as serve does since the second part of its
// request path's work (src/server/sse.ts; BENCHMARKS.md, "Serve's request path, second part").
// node scripts/bench/http-floor.mjs [--clients N] [--runs-per-client N] [--events N] [--lean | --direct]
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
  const { RESPONSE_ALREADY_SENT } = await import("@hono/node-server/utils/response");
  const events = Number(process.argv[3]);
  const direct = process.argv[4] === "direct";
  const lean = direct || process.argv[4] === "lean";
  const app = new Hono();
  let n = 0;
  /** The body's text: through the WHATWG Request (hono's c.req.text()), or, lean, from Node's request. */
  const bodyText = async (c) => {
    if (!lean) return c.req.text();
    const chunks = [];
    for await (const chunk of c.env.incoming) chunks.push(chunk);
    return Buffer.concat(chunks).toString("utf8");
  };
  app.post("/v1/sessions", async (c) => {
    await bodyText(c);
    return c.json({ sessionId: `sess_${++n}` }, 201);
  });
  app.post("/v1/sessions/:id/runs", async (c) => {
    JSON.parse(await bodyText(c));
    return c.json({ runId: `run_${++n}`, inferenceId: "inf" }, 202);
  });
  const message = (seq) =>
    `data: ${seq === events ? EVENT.replace('"tool-finished"', '"run-finished","status":"completed"') : EVENT}\nid: ${seq}\n\n`;
  if (direct)
    app.get("/v1/runs/:id/events", (c) => {
      // Four messages a turn, as below, each turn's as one write; the head goes with the first.
      const response = c.env.outgoing;
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      void (async () => {
        for (let seq = 0; seq < events;) {
          if (seq > 0) await new Promise((resolve) => setImmediate(resolve));
          let text = "";
          for (let i = 0; i < 4 && seq < events; i++) text += message(++seq);
          response.write(text);
        }
        response.end();
      })();
      return RESPONSE_ALREADY_SENT;
    });
  else if (lean)
    app.get("/v1/runs/:id/events", (c) => {
      // Four messages a turn, as below, each turn's as one chunk.
      let seq = 0;
      const body = new ReadableStream(
        {
          async pull(controller) {
            if (seq >= events) return controller.close();
            if (seq > 0) await new Promise((resolve) => setImmediate(resolve));
            let text = "";
            for (let i = 0; i < 4 && seq < events; i++) text += message(++seq);
            controller.enqueue(Buffer.from(text, "utf8"));
          },
        },
        { highWaterMark: 0 },
      );
      c.header("Transfer-Encoding", "chunked");
      c.header("Content-Type", "text/event-stream");
      c.header("Cache-Control", "no-cache");
      c.header("Connection", "keep-alive");
      return c.body(body);
    });
  else
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
    options: {
      clients: { type: "string" },
      "runs-per-client": { type: "string" },
      events: { type: "string" },
      lean: { type: "boolean" },
      direct: { type: "boolean" },
    },
  });
  const clients = Number(values.clients ?? 50);
  const runsPerClient = Number(values["runs-per-client"] ?? 20);
  const child = fork(fileURLToPath(import.meta.url), [
    "--serve",
    values.events ?? "22",
    values.direct ? "direct" : values.lean ? "lean" : "hono",
  ]);
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
