import { readdirSync, readlinkSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxPool, type SandboxPoolOptions, type SupervisedSandboxPool, type WorkerInfo } from "../../src/sandbox/index.js";
import type { SandboxLimits } from "../../src/sandbox/api.js";
import { isRunning, waitUntil } from "../server/processes.js";
import { wallMissing } from "../helpers/wall.js";
import { beforePayload, rejection, script } from "./helpers.js";

/*
 * A worker taken over by native code (test/fixtures/hostile-worker), inside the wall, attacks the host with
 * what it holds: its descriptors, its memory, and the protocol's order. Each time only that worker dies,
 * its call fails closed, the host's memory and event loop stay bounded, and another tenant is served.
 */

const workerPath = fileURLToPath(new URL("../fixtures/hostile-worker/worker.mjs", import.meta.url));
const pools: SupervisedSandboxPool[] = [];
afterAll(() => Promise.all(pools.map((pool) => pool.close())));

function hostilePool(options: SandboxPoolOptions): SupervisedSandboxPool {
  const pool = createSandboxPool({ wall: "auto", workerPath, ...options });
  pools.push(pool);
  expect(pool.wall, wallMissing("the pool fell back to no wall")).toBe("bubblewrap");
  return pool;
}

const policy = script("policy", `export default { hooks: { beforeToolCall() {} } };`);
let runs = 0;

async function openAs(pool: SupervisedSandboxPool, tenantName: string, limits?: Partial<SandboxLimits>) {
  const tenant = pool.tenant(tenantName, limits);
  const run = await tenant.openRun({ runId: `run-${tenantName}-${++runs}`, scripts: await tenant.load([policy]) });
  /** One hook call; the stand-in reads the payload's tool name as its orders. */
  return (orders = "lookup") => run.callHook("policy", "beforeToolCall", beforePayload(orders));
}

function workerOf(pool: SupervisedSandboxPool, tenant: string): WorkerInfo {
  const worker = pool.workers().find((info) => info.tenants.includes(tenant));
  expect(worker, `a worker holding ${tenant}`).toBeDefined();
  return worker!;
}

/** The descriptors of `pid` that are pipes or sockets: the ones that can lead out of the process. */
function channelsOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/fd`)
    .map(Number)
    .filter((fd) => {
      try {
        return /^(pipe|socket):/.test(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    })
    .sort((a, b) => a - b);
}

/** How far this process's memory rose above its level before `work`, sampled every 10 ms until it settles. */
async function growthDuring<T>(work: Promise<T>): Promise<{ outcome: PromiseSettledResult<T>; rssMb: number; heapMb: number }> {
  const before = process.memoryUsage();
  let peak = { rss: before.rss, heap: before.heapUsed };
  const sampler = setInterval(() => {
    const now = process.memoryUsage();
    peak = { rss: Math.max(peak.rss, now.rss), heap: Math.max(peak.heap, now.heapUsed) };
  }, 10);
  const [outcome] = await Promise.allSettled([work]);
  clearInterval(sampler);
  const after = process.memoryUsage();
  peak = { rss: Math.max(peak.rss, after.rss), heap: Math.max(peak.heap, after.heapUsed) };
  return { outcome, rssMb: (peak.rss - before.rss) / 1048576, heapMb: (peak.heap - before.heapUsed) / 1048576 };
}

function failure(outcome: PromiseSettledResult<unknown>): { code?: string; message: string } {
  expect(outcome.status, "the call must fail closed").toBe("rejected");
  return (outcome as PromiseRejectedResult).reason as { code?: string; message: string };
}

describe("a taken-over worker writing without end", () => {
  it("on any descriptor it holds is killed alone; the host's memory stays bounded and another tenant is served", async () => {
    // Frames of at most 4 x 1 MiB + 1 MiB: what the host may buffer of one worker.
    const pool = hostilePool({ workers: 2, maxPayloadBytes: 1048576, killGraceMs: 500 });
    const honest = await openAs(pool, "honest");
    expect(await honest()).toBeUndefined();
    const honestWorker = workerOf(pool, "honest");
    await openAs(pool, "flood-fd", { cpuMs: 300, wallMs: 300 });
    const first = workerOf(pool, "flood-fd");
    expect(first.pid).not.toBe(first.launchedPid); // the Node process inside the wall, not bwrap
    const channels = channelsOf(first.pid!);
    // The host's channels: stdout, stderr and the frame pipe (no IPC channel beside them); Node's own internal
    // pipes come after.
    expect(channels.filter((fd) => fd <= 4)).toEqual([1, 2, 3]);
    const measured: string[] = [];
    for (const fd of channels) {
      // Loading places the tenant on a fresh worker (the last one is gone).
      const flood = await openAs(pool, "flood-fd");
      const victim = workerOf(pool, "flood-fd");
      const { outcome, rssMb, heapMb } = await growthDuring(flood(String(fd)));
      const error = failure(outcome);
      measured.push(`fd ${fd}: ${error.code}, host rss +${rssMb.toFixed(1)} MB, heap +${heapMb.toFixed(1)} MB`);
      if (fd <= 3) {
        // A channel to the host: the breach itself ends the worker, named.
        expect(error.code).toBe("SANDBOX_CRASHED");
        expect(error.message).toContain("it broke the protocol");
        expect(error.message).toContain(
          fd === 3 ? "a broken frame" : `on its stdout and stderr (the last on ${fd === 1 ? "stdout" : "stderr"})`,
        );
      } else {
        // One of Node's own pipes inside the worker: nothing reaches the host, the watchdog ends the call.
        expect(["SANDBOX_CRASHED", "SANDBOX_TIMEOUT"]).toContain(error.code);
      }
      expect(rssMb, measured.at(-1)).toBeLessThan(200);
      expect(heapMb, measured.at(-1)).toBeLessThan(100);
      await waitUntil(() => !isRunning(victim.launchedPid!) && !isRunning(victim.pid!), 5000, `the flooding worker (fd ${fd}) to be gone`);
      // Only that worker: the other tenant's stays, and answers.
      expect(workerOf(pool, "honest").pid).toBe(honestWorker.pid);
      expect(await honest()).toBeUndefined();
    }
    console.log(`host memory while a walled worker floods each descriptor:\n  ${measured.join("\n  ")}`);
  }, 180_000);
});

describe("the host measures a worker's memory itself", () => {
  it("a worker holding 300 MB that reports 1 byte shows its real size, and is retired over a 150 MB budget", async () => {
    const measuring = hostilePool({ workers: 1 });
    // Time to fill 300 MB on a loaded machine.
    const generous = { cpuMs: 20_000, wallMs: 20_000 };
    const liar = await openAs(measuring, "rss-liar", generous);
    expect(await liar()).toBeUndefined();
    const worker = workerOf(measuring, "rss-liar");
    expect(worker.pid).not.toBe(worker.launchedPid);
    // The whole tree under bwrap, the Node process inside included (bwrap alone is a few MB). The host's
    // sample may be one period old (taken while the worker was still filling), so wait for the next one.
    const live = () => measuring.workers().find((info) => info.pid === worker.pid)?.rssBytes ?? 0;
    await waitUntil(() => live() > 300 * 1048576, 5000, "the host's measure to show the 300 MB held");

    const budgeted = hostilePool({ workers: 1, workerRssBudgetMb: 150 });
    const liarThere = await openAs(budgeted, "rss-liar", generous);
    const before = workerOf(budgeted, "rss-liar");
    expect(await liarThere()).toBeUndefined();
    // Retired after that reply and reaped, its tenant gone elsewhere: its processes exit.
    await waitUntil(() => !isRunning(before.launchedPid!), 10_000, "the worker over its budget to be retired");
  });

  it("a worker growing while a call runs, with no reply, is killed by the host's watchdog long before the call's time is up", async () => {
    // Budget 100 MB: killed once over 356 MB (budget + 256 MB) while the call runs; the call may run 20 s.
    const pool = hostilePool({ workers: 2, workerRssBudgetMb: 100 });
    const honest = await openAs(pool, "honest");
    const bomb = await openAs(pool, "memory-bomb", { cpuMs: 20_000, wallMs: 20_000 });
    const victim = workerOf(pool, "memory-bomb");
    const started = performance.now();
    const error = await rejection(bomb());
    const elapsed = performance.now() - started;
    console.log(`memory bomb ended after ${elapsed.toFixed(0)} ms: ${error.message}`);
    expect(error.code).toBe("SANDBOX_MEMORY");
    expect(error.message).toContain("over 356 MB");
    expect(elapsed).toBeLessThan(15_000); // the call's own limit (20 s) is not what ended it
    await waitUntil(() => !isRunning(victim.launchedPid!), 5000, "the bombing worker to be gone");
    expect(await honest()).toBeUndefined();
    // The tenant blamed runs apart from now on.
    await openAs(pool, "memory-bomb");
    expect(workerOf(pool, "memory-bomb").role).toBe("quarantine");
  });
});

describe("frames out of protocol order", () => {
  it("a flood of ready messages from the quarantine worker ends it at the second; the host's event loop and another tenant keep going", async () => {
    const pool = hostilePool({ workers: 1 });
    const honest = await openAs(pool, "honest");
    const flooder = await openAs(pool, "ready-flood");
    // A first breach sends the tenant to the quarantine worker, the one whose ready once walked /proc.
    expect((await rejection(flooder("breach"))).code).toBe("SANDBOX_TIMEOUT");
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const flooding = rejection(flooder("flood"));
    let served = 0;
    const until = performance.now() + 2000;
    while (performance.now() < until) {
      expect(await honest()).toBeUndefined();
      served++;
    }
    delay.disable();
    const error = await flooding;
    const maxDelayMs = delay.max / 1e6;
    console.log(`ready flood: another tenant served ${served} calls in 2 s, event loop delay max ${maxDelayMs.toFixed(1)} ms`);
    expect(error.code).toBe("SANDBOX_CRASHED");
    expect(error.message).toContain("a second ready message");
    expect(maxDelayMs).toBeLessThan(1000);
    expect(served).toBeGreaterThan(10);
  });

  it("a reply before the worker said it is ready is a breach", async () => {
    const pool = hostilePool({ workers: 1 });
    const error = await rejection(openAs(pool, "reply-before-ready"));
    expect(error.code).toBe("SCRIPT_LOAD");
    expect(error.message).toContain("a reply before its ready message");
  });
});
