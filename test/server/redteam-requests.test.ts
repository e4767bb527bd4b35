import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { connect } from "node:net";
import { DatabaseSync } from "node:sqlite";
import { twoToolSteps, writeFixture } from "./fixture.js";
import { api, readEvents } from "./serve-process.js";
import { waitUntil } from "./processes.js";
import { probeHealth, runToEnd, STALL_BOUND_MS, startMeteredServe, victimStillServed } from "./redteam-server.js";

/*
 * Attacks through the HTTP surface of a real `hookbox serve`: malformed and oversized bodies, request options
 * above the operator's limits, event streams held open, a failing store, a host bug. Each is answered with a
 * 4xx naming the problem (never a 5xx for bad input), no host path reaches the tenant, and the victim's runs
 * and /healthz keep answering.
 */

const MiB = 1024 * 1024;
let server: Awaited<ReturnType<typeof startMeteredServe>>;
let fixture: ReturnType<typeof writeFixture>;
const attacker = () => api(server.url, "attacker-key");
let sessionId: string;

beforeAll(async () => {
  fixture = writeFixture([
    { name: "victim", key: "victim-key", steps: twoToolSteps },
    {
      name: "attacker",
      key: "attacker-key",
      steps: [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] }, { text: "done" }],
      limits: { maxIterations: 3, pauseTimeoutMs: 60_000, maxEventStreams: 4 },
    },
  ]);
  server = await startMeteredServe({ config: fixture.config, store: fixture.store });
  sessionId = (await attacker().request("POST", "/v1/sessions", {})).body.sessionId;
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

async function underAttack<T>(attack: () => Promise<T>): Promise<T> {
  await server.stallWindow();
  const probe = probeHealth(server.url);
  const [result] = await Promise.all([attack(), victimStillServed(server.url, "victim-key")]);
  const { failures } = await probe.stop();
  expect(failures).toBe(0);
  expect((await server.stallWindow()).maxCpuMs).toBeLessThan(STALL_BOUND_MS);
  return result;
}

const runs = () => `/v1/sessions/${sessionId}/runs`;

/** A request announcing a `bytes`-long body and sending none of it: the status line the server answers with. */
async function announceBody(path: string, bytes: number): Promise<{ status: number; body: any }> {
  const { port } = new URL(server.url);
  const socket = connect(Number(port), "127.0.0.1");
  socket.write(
    `POST ${path} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer attacker-key\r\ncontent-type: application/json\r\ncontent-length: ${bytes}\r\n\r\n{"prompt":`,
  );
  let text = "";
  for await (const chunk of socket) {
    text += String(chunk);
    if (text.includes("\r\n\r\n") && text.includes("}}")) break;
  }
  socket.destroy();
  return { status: Number(text.split(" ")[1]), body: JSON.parse(text.slice(text.indexOf("{"))) };
}

async function postBytes(path: string, bytes: Uint8Array): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { authorization: "Bearer attacker-key", "content-type": "application/json" },
    body: bytes,
  });
  return { status: response.status, body: await response.json() };
}

describe("hookbox serve under request attacks", () => {
  it("a 1 MiB body rejected by its schema, and one over the size limit: 400 and 413, fast", async () => {
    const tags = Object.fromEntries(Array.from({ length: 9000 }, (_, i) => [`t${i}`, "z".repeat(100)]));
    const body = JSON.stringify({ prompt: "x", tags, unknownField: true });
    expect(body.length).toBeGreaterThan(0.9 * MiB);
    const [rejected, tooBig, tooMany] = await underAttack(() =>
      Promise.all([
        attacker().request("POST", runs(), body),
        announceBody(runs(), 64 * MiB),
        attacker().request("POST", runs(), JSON.stringify({ prompt: "x", userContext: { list: new Array(20_000).fill(0) } })),
      ]),
    );
    expect(rejected).toMatchObject({ status: 400, body: { error: { code: "VALIDATION", message: '$: unknown field "unknownField"' } } });
    expect(tooBig).toMatchObject({ status: 413, body: { error: { code: "BODY_TOO_LARGE" } } });
    expect(tooMany).toMatchObject({
      status: 400,
      body: { error: { code: "INVALID_JSON", message: "the body has more than 10000 values" } },
    });
  }, 60_000);

  it("malformed bodies are 4xx naming the problem, never 5xx: deep nesting, bad UTF-8, wrong type, huge numbers", async () => {
    const results = await underAttack(() =>
      Promise.all([
        attacker().request("POST", runs(), "[".repeat(500_000)),
        attacker().request("POST", runs(), `{"prompt":"x","userContext":{"a":${"[".repeat(5000)}${"]".repeat(5000)}}}`),
        postBytes(runs(), Buffer.from([0x7b, 0x22, 0x70, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])),
        attacker().request("POST", runs(), "prompt=x", { "content-type": "application/x-www-form-urlencoded" }),
        attacker().request("POST", runs(), '{"prompt":"x","maxIterations":1e400}'),
        attacker().request("POST", runs(), '{"prompt":"x","tags":{"a":1e999999}}'),
        attacker().request("POST", runs(), '{"prompt":"x"'),
      ]),
    );
    expect(results.map((r) => r.status)).toEqual([400, 400, 400, 415, 400, 400, 400]);
    expect(results[0].body.error).toEqual({ code: "INVALID_JSON", message: "the body nests deeper than 32 levels", path: "$" });
    expect(results[1].body.error.message).toBe("the body nests deeper than 32 levels");
    expect(results[2].body.error).toMatchObject({ code: "INVALID_JSON", message: "the request body is not valid UTF-8" });
    expect(results[3].body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect(results[4].body.error.path).toBe("$.maxIterations");
    expect(results[5].body.error.path).toBe("$.tags.a");
  }, 60_000);

  it("request options above the tenant's limits are refused, naming the field and the limit", async () => {
    const [iterations, pause, defaults, within] = await underAttack(() =>
      Promise.all([
        attacker().request("POST", runs(), { prompt: "x", maxIterations: 1000 }),
        attacker().request("POST", runs(), { prompt: "x", pauseTimeoutMs: 2_000_000_000 }),
        attacker().request("POST", "/v1/sessions", { defaults: { maxIterations: 50 } }),
        attacker().request("POST", "/v1/sessions", { defaults: { maxIterations: 2, pauseTimeoutMs: 1000 } }),
      ]),
    );
    expect(iterations).toMatchObject({
      status: 400,
      body: {
        error: {
          code: "ABOVE_TENANT_LIMIT",
          path: "$.maxIterations",
          message: "$.maxIterations: 1000 is above the tenant's limits.maxIterations of 3",
        },
      },
    });
    expect(pause.body.error).toMatchObject({ code: "VALIDATION", path: "$.pauseTimeoutMs" });
    const pauseWithinDay = await attacker().request("POST", runs(), { prompt: "x", pauseTimeoutMs: 3_600_000 });
    expect(pauseWithinDay.body.error).toMatchObject({ code: "ABOVE_TENANT_LIMIT", path: "$.pauseTimeoutMs" });
    expect(pauseWithinDay.body.error.message).toContain("limits.pauseTimeoutMs of 60000");
    expect(defaults.body.error).toMatchObject({ code: "ABOVE_TENANT_LIMIT", path: "$.defaults.maxIterations" });
    expect(within.status).toBe(201);
  }, 60_000);

  it("event streams past the tenant's cap are refused with 429, the victim's streams are not", async () => {
    const paused = await attacker().request("POST", "/v1/sessions", {});
    const run = await attacker().request("POST", `/v1/sessions/${paused.body.sessionId}/runs`, { prompt: "x", step: true });
    expect(run.status).toBe(202);
    const streams = await underAttack(async () => {
      const opened = [];
      for (let i = 0; i < 12; i++) {
        const controller = new AbortController();
        const response = await fetch(`${server.url}/v1/runs/${run.body.runId}/events`, {
          headers: { authorization: "Bearer attacker-key" },
          signal: controller.signal,
        });
        const body = response.status === 429 ? ((await response.json()) as { error: { code: string } }) : undefined;
        opened.push({ status: response.status, body, controller });
      }
      return opened;
    });
    expect(streams.map((s) => s.status)).toEqual([...new Array(4).fill(200), ...new Array(8).fill(429)]);
    expect(streams[4].body?.error.code).toBe("TOO_MANY_STREAMS");
    // Closing one frees its place.
    streams[0].controller.abort();
    let reopened = 0;
    for (let attempt = 0; attempt < 50 && reopened !== 200; attempt++) {
      const controller = new AbortController();
      const response = await fetch(`${server.url}/v1/runs/${run.body.runId}/events`, {
        headers: { authorization: "Bearer attacker-key" },
        signal: controller.signal,
      });
      reopened = response.status;
      controller.abort();
      if (reopened !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(reopened).toBe(200);
    for (const stream of streams) stream.controller.abort();
    await attacker().request("POST", `/v1/runs/${run.body.runId}/cancel`);
  }, 60_000);

  it("a store error reaches the tenant without the host's paths, and the server goes on", async () => {
    const hostDir = dirname(fixture.store);
    const { sessionId: broken } = await runToEnd(server.url, "attacker-key");
    // The operator's store loses a table under the running server: every snapshot write (its new blocks) now fails.
    const db = new DatabaseSync(fixture.store);
    db.exec("DROP TABLE session_log");
    db.close();
    const { final, runId } = await runToEnd(server.url, "attacker-key");
    expect(final).toMatchObject({ status: "failed", errorCode: "STORE" });
    expect(final.reason).not.toContain(hostDir);
    expect(final.reason).toContain("<host>");
    const record = await attacker().request("GET", `/v1/runs/${runId}`);
    expect(record.body.reason).not.toContain(hostDir);
    const view = await attacker().request("GET", `/v1/sessions/${broken}`);
    expect(view.status).toBe(500);
    expect(JSON.stringify(view.body)).not.toContain(hostDir);
    expect(view.body.error.message).toMatch(/reference fault-\d+-\d+/);
    expect(server.stderr()).toContain("no such table: session_log");
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  }, 60_000);
});

describe("hookbox serve and its own bugs", () => {
  it("a stray rejection in one tenant's host code is logged once and the server keeps serving everyone", async () => {
    const buggy = writeFixture([
      { name: "victim", key: "victim-key", steps: twoToolSteps },
      { name: "buggy", key: "buggy-key", steps: [{ toolCalls: [{ id: "c1", name: "record", args: { id: "c1" } }] }, { text: "done" }] },
    ]);
    writeFileSync(
      join(buggy.dir, "tools.mjs"),
      `export default [{ name: "record", description: "records, with a bug", parameters: { type: "object" },
  handler: (args) => { void Promise.reject(new Error("stray rejection " + args.id)); return { recorded: args.id }; } }];
`,
    );
    const host = await startMeteredServe({ config: buggy.config, store: buggy.store });
    try {
      const { final } = await runToEnd(host.url, "buggy-key");
      expect(final).toMatchObject({ status: "completed" });
      await waitUntil(() => host.stderr().includes("stray rejection c1"), 5000, "the rejection to be logged");
      expect(host.stderr().match(/unhandled rejection/g)).toHaveLength(1);
      const victim = await runToEnd(host.url, "victim-key");
      expect(victim.final.status).toBe("completed");
      expect(host.child.exitCode).toBeNull();
      expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
      expect((await readEvents(host.url, "victim-key", victim.runId)).messages.at(-1)?.event.type).toBe("run-finished");
    } finally {
      await host.stop();
    }
  }, 60_000);
});
