import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxRun } from "../../src/sandbox/api.js";
import { beforePayload, middlewareCtx, script, toolCtx, turn, poolsClosedAfterEach } from "./helpers.js";

/*
 * Tenants apart: process-per-tenant isolation and idle eviction (docs/sandbox.md, "Tenants apart"),
 * asserted on the real worker processes and on what the workers themselves report.
 */

const newPool = poolsClosedAfterEach();

const policy = script(
  "policy",
  `import { defineScript } from "hookbox";
let calls = 0;
export default defineScript({
  hooks: { beforeToolCall(p) { calls++; return { action: "proceed", args: { tenantSeen: p.call.name, calls } }; } },
  tools: [{ name: "spin", description: "", handler(args) { const end = Date.now() + args.ms; while (Date.now() < end) {} return { spun: args.ms }; } }],
  middleware: [async function keep(turn, next) { const mark = "kept"; const after = await next(turn); after.metadata.mark = mark; return after; }],
});`,
);

async function tenantRun(pool: SupervisedSandboxPool, name: string, isolation?: "shared" | "process-per-tenant"): Promise<SandboxRun> {
  const sandbox = pool.tenant(name, { cpuMs: 5000, wallMs: 10_000 }, isolation ? { isolation } : undefined);
  return sandbox.openRun({ runId: `run-${name}`, scripts: await sandbox.load([policy]) });
}

async function hook(run: SandboxRun, name: string): Promise<unknown> {
  return run.callHook("policy", "beforeToolCall", beforePayload(name));
}

function workerOf(pool: SupervisedSandboxPool, tenant: string) {
  const workers = pool.workers().filter((worker) => worker.tenants.includes(tenant));
  expect(workers).toHaveLength(1);
  return workers[0]!;
}

/** The parent pid of a live process, from /proc. */
function parentOf(pid: number): number {
  return Number(/PPid:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
}

/** True when `pid` is `ancestor` or runs below it (a walled worker's Node runs below the bwrap this process started). */
function descendsFrom(pid: number, ancestor: number): boolean {
  for (let current = pid; current > 1; current = parentOf(current)) if (current === ancestor) return true;
  return false;
}

async function until(condition: () => boolean, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("isolation", () => {
  it("gives process-per-tenant tenants worker processes of their own; shared tenants share", async () => {
    const pool = newPool({ workers: 1 });
    const [a, b, c, d] = await Promise.all([
      tenantRun(pool, "alpha", "process-per-tenant"),
      tenantRun(pool, "beta", "process-per-tenant"),
      tenantRun(pool, "gamma"),
      tenantRun(pool, "delta"),
    ]);
    for (const [run, name] of [
      [a, "alpha"],
      [b, "beta"],
      [c, "gamma"],
      [d, "delta"],
    ] as const) {
      expect(await hook(run, name)).toMatchObject({ action: "proceed", args: { tenantSeen: name } });
    }
    const alpha = workerOf(pool, "alpha");
    const beta = workerOf(pool, "beta");
    expect(alpha.pid).not.toBe(beta.pid);
    expect(alpha.pid).not.toBe(process.pid);
    // Real child processes, each holding exactly one tenant and (by its own count) one isolate.
    for (const worker of [alpha, beta]) {
      expect(parentOf(worker.launchedPid!)).toBe(process.pid);
      expect(descendsFrom(worker.pid!, worker.launchedPid!)).toBe(true);
      expect(worker).toMatchObject({ isolation: "process-per-tenant", isolates: 1 });
      expect(worker.tenants).toHaveLength(1);
    }
    // The two shared tenants live together in the one shared worker, which holds neither dedicated tenant.
    const shared = workerOf(pool, "gamma");
    expect(workerOf(pool, "delta").pid).toBe(shared.pid);
    expect(shared.isolation).toBe("shared");
    expect(shared.tenants.sort()).toEqual(["delta", "gamma"]);
    expect(new Set([alpha.pid, beta.pid, shared.pid]).size).toBe(3);
  });

  it("a crash of one tenant's worker does not touch the other tenant's", async () => {
    const pool = newPool({ workers: 1, isolation: "process-per-tenant" });
    const [a, b] = await Promise.all([tenantRun(pool, "alpha"), tenantRun(pool, "beta")]);
    await hook(a, "alpha");
    await hook(b, "beta");
    const alphaPid = workerOf(pool, "alpha").pid!;
    const betaPid = workerOf(pool, "beta").pid!;
    // beta is mid-call (and keeps run state: its global counter) when alpha's process is killed.
    const inFlight = b.callTool("policy", "spin", { ms: 400 }, toolCtx);
    await new Promise((resolve) => setTimeout(resolve, 100));
    process.kill(alphaPid, "SIGKILL");
    expect(await inFlight).toEqual({ spun: 400 });
    expect(await hook(b, "beta")).toMatchObject({ args: { calls: 2 } });
    expect(workerOf(pool, "beta").pid).toBe(betaPid);
    // alpha comes back on a fresh process of its own.
    expect(await hook(a, "alpha")).toMatchObject({ action: "proceed", args: { tenantSeen: "alpha" } });
    const alphaNow = workerOf(pool, "alpha").pid!;
    expect(alphaNow).not.toBe(alphaPid);
    expect(alphaNow).not.toBe(betaPid);
  });

  it("moves a tenant to a process of its own when its isolation changes, once it is idle", async () => {
    const pool = newPool({ workers: 1 });
    const run = await tenantRun(pool, "mover");
    await tenantRun(pool, "neighbour");
    expect(workerOf(pool, "mover").isolation).toBe("shared");
    pool.tenant("mover", undefined, { isolation: "process-per-tenant" });
    expect(await hook(run, "mover")).toMatchObject({ action: "proceed" });
    const own = workerOf(pool, "mover");
    expect(own.isolation).toBe("process-per-tenant");
    expect(own.tenants).toEqual(["mover"]);
    expect(workerOf(pool, "neighbour").tenants).toEqual(["neighbour"]);
  });
});

describe("idle eviction", () => {
  it("disposes isolates unused for idleMs; the next call re-creates them transparently", async () => {
    // Long enough that a loaded machine does not evict "one" before "two" has answered.
    const pool = newPool({ workers: 1, idleMs: 3000 });
    const [a, b] = await Promise.all([tenantRun(pool, "one"), tenantRun(pool, "two")]);
    await hook(a, "one");
    await hook(b, "two");
    expect(pool.stats().liveIsolates).toBe(2);
    await until(() => pool.stats().liveIsolates === 0, 20_000);
    expect(pool.stats()).toMatchObject({ evictions: 2, tenants: 2 });
    // A third tenant's reply carries the worker's own count: the two evicted isolates are gone there.
    await hook(await tenantRun(pool, "three"), "three");
    expect(pool.workers()[0]!.isolates).toBe(1);
    // The evicted tenant's next call is a cold start that works (its run's script globals start over).
    expect(await hook(a, "one")).toMatchObject({ action: "proceed", args: { tenantSeen: "one", calls: 1 } });
    expect(pool.workers()[0]!.isolates).toBe(pool.stats().liveIsolates);
  });

  it("keeps at most maxLiveIsolates, least recently used out first, and serves every tenant again", async () => {
    const pool = newPool({ workers: 1, maxLiveIsolates: 3, idleMs: 0 });
    const runs: SandboxRun[] = [];
    for (let i = 0; i < 8; i++) {
      runs.push(await tenantRun(pool, `t${i}`));
      await hook(runs[i]!, `t${i}`);
      expect(pool.stats().liveIsolates).toBeLessThanOrEqual(3);
    }
    expect(pool.workers()[0]!.isolates).toBe(3);
    expect(pool.workers()[0]!.tenants.sort()).toEqual(["t5", "t6", "t7"]);
    // t5 is used again, so t6 (now the least recently used) goes when t0 comes back.
    await hook(runs[5]!, "t5");
    await hook(runs[0]!, "t0");
    expect(pool.workers()[0]!.tenants.sort()).toEqual(["t0", "t5", "t7"]);
    for (let i = 0; i < 8; i++) expect(await hook(runs[i]!, `t${i}`)).toMatchObject({ args: { tenantSeen: `t${i}` } });
    expect(pool.stats().liveIsolates).toBe(3);
    // t0-t4 went while loading t3-t7, t6 for t0, then one per tenant of the last round but t0.
    expect(pool.stats().evictions).toBe(5 + 1 + 7);
  });

  it("never disposes an isolate with a call in flight, nor one whose callback awaits next()", async () => {
    const pool = newPool({ workers: 1, maxLiveIsolates: 1, idleMs: 50 });
    const busy = await tenantRun(pool, "busy");
    const other = await tenantRun(pool, "other");
    // A tool call running (CPU) across several idle periods while another tenant takes the only slot.
    const spinning = busy.callTool("policy", "spin", { ms: 500 }, toolCtx);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const meanwhile = hook(other, "other");
    expect(await spinning).toEqual({ spun: 500 });
    expect(await meanwhile).toMatchObject({ action: "proceed" });
    // A middleware awaiting next() (the host takes 400 ms) holds no gate, but its context must survive.
    const waiting = busy.callMiddleware("policy", "keep", turn(), middlewareCtx, async (passed) => {
      await hook(other, "other");
      await new Promise((resolve) => setTimeout(resolve, 400));
      await hook(other, "other");
      return passed;
    });
    const result = await waiting;
    expect(result.metadata).toEqual({ mark: "kept" });
    // Once idle, both are evicted by age.
    await until(() => pool.stats().liveIsolates === 0);
  });
});

describe("workers over their RSS budget", () => {
  it("are retired and reaped once their tenants have left, even when a tenant leaves with a call in flight", async () => {
    // Every worker is over a 1 MB budget after its first reply, so each reply retires the worker it came from.
    const pool = newPool({ workers: 1, workerRssBudgetMb: 1 });
    const runs = await Promise.all(["r1", "r2", "r3", "r4"].map((name) => tenantRun(pool, name)));
    for (let round = 0; round < 3; round++) {
      await Promise.all(runs.map((run, i) => hook(run, `r${i + 1}`)));
    }
    // No retired worker without tenants is left running: each one's process exits.
    await until(() => pool.workers().every((worker) => !worker.retiring || worker.tenants.length > 0));
    const lingering = pool.workers().filter((worker) => worker.retiring && worker.tenants.length === 0);
    expect(lingering).toEqual([]);
  });
});
