import { expect } from "vitest";
import type { HookboxEvent } from "../../src/events/types.js";
import { join } from "node:path";
import { repoRoot } from "../helpers/cli.js";
import { api, readEvents, startServe, type ServeProcess } from "./serve-process.js";

/*
 * Red-team helpers for a real `hookbox serve` on loopback: an attacker tenant attacks, a victim tenant keeps
 * working, /healthz is asked at a steady interval, and the server's event-loop stall is read from the stall
 * meter preloaded into it (main-thread CPU time between timer ticks: on a loaded shared machine, wall-clock
 * latency mostly measures waiting for a CPU, not the host's own blocking work).
 */

/** The real `hookbox serve` with scripts/bench/stall-meter.mjs preloaded: `stallWindow()` reads and resets it. */
export async function startMeteredServe(options: {
  config: string;
  store: string;
}): Promise<ServeProcess & { stallWindow(): Promise<Stall> }> {
  const server = await startServe({ ...options, nodeArgs: ["--import", join(repoRoot, "scripts/bench/stall-meter.mjs")] });
  await tenantsBuilt(server.url);
  return {
    ...server,
    async stallWindow() {
      const seen = server.stderr().length;
      server.child.kill("SIGUSR2");
      for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
        const match = /stall-meter (\{.*\})\n/.exec(server.stderr().slice(seen));
        if (match) return JSON.parse(match[1]) as Stall;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      throw new Error("the stall meter did not answer");
    },
  };
}

/**
 * Waits until serve has built every tenant's runtime (it builds them after listening). The attacks are on runs,
 * not on builds: a tenant built while another tenant's attack loads the machine could miss its load deadline and
 * stay unavailable for its retry period, which is the build's rule (docs/server.md, "Start-up"), not the test's.
 */
async function tenantsBuilt(url: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; ;) {
    const { tenants } = (await (await fetch(`${url}/healthz`)).json()) as {
      tenants?: { configured: number; ready: number; building: number; failed: number };
    };
    if (!tenants || tenants.ready === tenants.configured) return;
    if (tenants.failed > 0) throw new Error(`serve failed to build ${tenants.failed} tenant(s): ${JSON.stringify(tenants)}`);
    if (Date.now() > deadline) throw new Error(`serve did not build its tenants within 60 s: ${JSON.stringify(tenants)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The longest stretch of the server main thread's own CPU time between two 10 ms timer ticks, and in wall time. */
export interface Stall {
  maxCpuMs: number;
  maxWallMs: number;
}

/** Times /healthz every `intervalMs` until stopped: how many answers, how many were not 200. */
export function probeHealth(url: string, intervalMs = 20): { stop(): Promise<{ count: number; failures: number }> } {
  let running = true;
  let count = 0;
  let failures = 0;
  const loop = (async () => {
    while (running) {
      try {
        const response = await fetch(`${url}/healthz`);
        await response.text();
        if (response.status !== 200) failures++;
      } catch {
        failures++;
      }
      count++;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { count, failures };
    },
  };
}

/** Creates a session for `key`, starts a run (extra body fields allowed) and reads its SSE stream to the end. */
export async function runToEnd(
  url: string,
  key: string,
  body: Record<string, unknown> = {},
): Promise<{ sessionId: string; runId: string; events: HookboxEvent[]; final: HookboxEvent & { type: "run-finished" } }> {
  const client = api(url, key);
  const session = await client.request("POST", "/v1/sessions", {});
  expect(session.status).toBe(201);
  const started = await client.request("POST", `/v1/sessions/${session.body.sessionId}/runs`, { prompt: "go", ...body });
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const { messages } = await readEvents(url, key, started.body.runId);
  const events = messages.map((m) => m.event);
  const final = events.at(-1);
  if (final?.type !== "run-finished") throw new Error(`run ${started.body.runId} ended without run-finished: ${JSON.stringify(final)}`);
  return { sessionId: session.body.sessionId, runId: started.body.runId, events, final };
}

/** A victim run (two host tool calls) completes, and /healthz answers, while an attack is under way. */
export async function victimStillServed(url: string, key: string): Promise<void> {
  const { final } = await runToEnd(url, key);
  expect(final).toMatchObject({ status: "completed", text: "both recorded" });
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
}

/**
 * The bound a test asserts on the stall (CPU ms). The goal, under 100 ms, is measured by
 * scripts/bench/host-stall-server.mjs (BENCHMARKS.md); a test only asserts a bound with a wide margin that
 * the unbounded host work these attacks used to cause (seconds) would still break. The widest case, a raised
 * per-result budget, stalls 165-181 ms on a quiet machine and was seen at 260 ms on a heavily loaded one.
 */
export const STALL_BOUND_MS = 500;
