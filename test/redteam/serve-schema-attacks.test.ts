import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { writeFixture, twoToolSteps } from "../server/fixture.js";
import { api, readEvents, startServe, type ServeProcess } from "../server/serve-process.js";
import { MAX_STALL_MS, MAX_WALL_STALL_MS, report } from "./stall.js";

/*
 * Red team against the real `hookbox serve` on loopback: an attacker tenant and a victim tenant in one
 * server process. The server's event-loop stall is measured inside it (loop-probe.mjs, the same probe as
 * stall.ts) and seen from outside as the latency of /healthz, polled back to back for the whole attack.
 */
const toolScript = (tools: { name: string; parameters: unknown }[]) => `import { defineScript } from "hookbox";
export default defineScript({ tools: ${JSON.stringify(tools)}.map((tool) => ({ ...tool, description: "", handler(args) { return { ok: true }; } })) });\n`;

const attackTools = [
  { name: "pattern", parameters: { type: "object", properties: { code: { type: "string", pattern: "^(a+)+$" } } } },
  { name: "unique", parameters: { type: "object", properties: { list: { type: "array", uniqueItems: true } } } },
];
/* ajv's pairwise uniqueItems took 0.6 s on 10k items, 1.9 s on 20k on this machine; 28 "a"s stall a backtracking regex for seconds. */
const attackSteps = [
  {
    toolCalls: [
      { id: "c1", name: "pattern", args: { code: "a".repeat(40) + "!" } },
      { id: "c2", name: "unique", args: { list: [...Array.from({ length: 40_000 }, (_, i) => i), 0] } },
    ],
  },
  { text: "attack over" },
];

/*
 * The attacks are on the host's validation of tool arguments, not on script CPU: the scripts' top-level code
 * (a map over two tools) gets a limit wide enough that loading it never times out on a loaded machine.
 */
const loadLimits = { cpuMs: 2000, wallMs: 5000 };

const warmupSteps = [
  {
    toolCalls: [
      { id: "c1", name: "pattern", args: { code: "aaa!" } },
      { id: "c2", name: "unique", args: { list: [1, 2, 1] } },
    ],
  },
  { text: "warm" },
];

/** Polls /healthz back to back until stopped; resolves with every latency seen. */
function pollHealth(url: string): { stop(): Promise<number[]> } {
  let running = true;
  const latencies: number[] = [];
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const response = await fetch(`${url}/healthz`);
      expect(response.status).toBe(200);
      await response.text();
      latencies.push(performance.now() - started);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return latencies;
    },
  };
}

/** The serve process's own stall figures since the last call (loop-probe.mjs). */
async function probeFigures(server: ServeProcess, file: string, seq: number): Promise<{ stallMs: number; busyStallMs: number }> {
  server.child.kill("SIGUSR2");
  const started = Date.now();
  for (;;) {
    if (existsSync(file)) {
      const figures = JSON.parse(readFileSync(file, "utf8")) as { seq: number; stallMs: number; busyStallMs: number };
      if (figures.seq === seq) return figures;
    }
    if (Date.now() - started > 10_000) throw new Error("the serve process's loop probe did not answer");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function completedRun(server: ServeProcess, key: string) {
  const client = api(server.url, key);
  const { body: session } = await client.request("POST", "/v1/sessions", {});
  const { status, body: run } = await client.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "go" });
  expect(status).toBe(202);
  const { messages } = await readEvents(server.url, key, run.runId);
  return messages.map((message) => message.event);
}

async function allTenantsReady(server: ServeProcess, count: number) {
  for (;;) {
    const { body } = await api(server.url, undefined).request("GET", "/healthz");
    if (body.tenants.ready + body.tenants.failed === count) return body.tenants;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("red team: tool schemas against hookbox serve", () => {
  it("a pattern and uniqueItems attack neither stalls serve nor delays the victim's run", async () => {
    const fixture = writeFixture([
      { name: "attacker", key: "attacker-key", steps: attackSteps, scripts: { "attack.ts": toolScript(attackTools) }, limits: loadLimits },
      { name: "victim", key: "victim-key", steps: twoToolSteps },
      { name: "warmup", key: "warmup-key", steps: warmupSteps, scripts: { "warmup.ts": toolScript(attackTools) }, limits: loadLimits },
    ]);
    const probeFile = join(fixture.dir, "loop-probe.json");
    const server = await startServe({
      config: fixture.config,
      store: fixture.store,
      env: { NODE_OPTIONS: `--import=${pathToFileURL(join(import.meta.dirname, "loop-probe.mjs")).href}`, HOOKBOX_LOOP_PROBE: probeFile },
    });
    try {
      // Start-up is not the attack: every tenant built (serve builds them after listening), and the server's first
      // run loads code lazily (chunks, ajv's code paths).
      await allTenantsReady(server, 3);
      await completedRun(server, "warmup-key");
      await probeFigures(server, probeFile, 1);
      const health = pollHealth(server.url);
      const started = performance.now();
      const [attack, victim] = await Promise.all([completedRun(server, "attacker-key"), completedRun(server, "victim-key")]);
      const elapsedMs = performance.now() - started;
      const latencies = await health.stop();
      const inside = await probeFigures(server, probeFile, 2);
      const worstHealthz = Math.max(...latencies);
      const attackName = "pattern ^(a+)+$ (40 chars) + uniqueItems over 40k items";
      report({ attack: attackName, where: "serve process", ...inside, elapsedMs });
      report({ attack: attackName, where: "serve, slowest /healthz", stallMs: worstHealthz, elapsedMs });

      const finished = attack.filter((event) => event.type === "tool-finished");
      expect(finished.map((event) => (event.type === "tool-finished" ? event.error?.code : undefined)).sort()).toEqual([
        "TOOL_ARGS",
        "TOOL_ARGS",
      ]);
      expect(attack.at(-1)).toMatchObject({ type: "run-finished", status: "completed" });
      expect(victim.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
      expect(latencies.length).toBeGreaterThanOrEqual(2);
      expect(inside.busyStallMs).toBeLessThan(MAX_STALL_MS);
      expect(inside.stallMs).toBeLessThan(MAX_WALL_STALL_MS);
      expect(worstHealthz).toBeLessThan(MAX_WALL_STALL_MS);
      expect(server.child.exitCode).toBeNull();
    } finally {
      await server.stop();
    }
  });

  it("an $async schema never runs: serve --strict refuses it at start; serve answers the tenant 503 naming it and serves the others", async () => {
    const fixture = writeFixture([
      {
        name: "attacker",
        key: "attacker-key",
        steps: [{ toolCalls: [{ id: "c1", name: "boom", args: {} }] }, { text: "x" }],
        scripts: { "attack.ts": toolScript([{ name: "boom", parameters: { $async: true, type: "object" } }]) },
        limits: loadLimits,
      },
      { name: "victim", key: "victim-key", steps: twoToolSteps },
    ]);
    const result = await runCli(["serve", "--strict", "--port", "0", "--store", fixture.store, "--config", fixture.config]);
    expect(result.code).toBe(2);
    expect(result.stdout).not.toContain("listening");
    expect(result.stderr).toContain("tenant attacker");
    expect(result.stderr).toContain("tools[0] (boom): parameters at #/$async");
    expect(result.stderr).not.toMatch(/Unhandled|at .*\.js:\d+/);

    const server = await startServe({ config: fixture.config, store: fixture.store });
    try {
      const attacker = api(server.url, "attacker-key");
      const { body: session } = await attacker.request("POST", "/v1/sessions", {});
      const refused = await attacker.request("POST", `/v1/sessions/${session.sessionId}/runs`, { prompt: "go" });
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe("TENANT_UNAVAILABLE");
      expect(refused.body.error.message).toContain("tools[0] (boom): parameters at #/$async");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      const victim = await completedRun(server, "victim-key");
      expect(victim.at(-1)).toMatchObject({ type: "run-finished", status: "completed", text: "both recorded" });
      expect(await allTenantsReady(server, 2)).toEqual({ configured: 2, ready: 1, building: 0, failed: 1 });
      expect(server.stderr()).toContain("tenant attacker is unavailable");
      expect(server.stderr()).not.toMatch(/Unhandled|at .*\.js:\d+/);
      expect(server.child.exitCode).toBeNull();
    } finally {
      await server.stop();
    }
  });
});
