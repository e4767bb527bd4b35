import { describe, expect, it } from "vitest";
import { createSandboxPool, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxRun } from "../../src/sandbox/api.js";
import { beforePayload, script, poolsClosedAfterEach } from "./helpers.js";

/*
 * The blast radius in shared mode (docs/sandbox.md, "Blast radius"): a shared worker never holds more than
 * maxTenantsPerWorker tenants, and tenants of two cordons never share a worker, quarantine included.
 * Asserted on the pool's workers and on the tenant names the workers were given.
 */

const newPool = poolsClosedAfterEach();

const policy = script(
  "policy",
  `export default { hooks: { beforeToolCall(p) { if (p.call.name === "spin") { for (;;) {} } return { action: "proceed", args: { seen: p.call.name } }; } } };`,
);

async function tenantRun(pool: SupervisedSandboxPool, name: string, cordon?: string): Promise<SandboxRun> {
  const sandbox = pool.tenant(name, { cpuMs: 5000, wallMs: 10_000 }, cordon ? { cordon } : undefined);
  return sandbox.openRun({ runId: `run-${name}`, scripts: await sandbox.load([policy]) });
}

async function served(run: SandboxRun, name = "ping"): Promise<void> {
  expect(await run.callHook("policy", "beforeToolCall", beforePayload(name))).toEqual({ action: "proceed", args: { seen: name } });
}

/** Every live worker's cordon and tenants; asserts no worker mixes cordons (by the tenants' names' prefix). */
function layout(pool: SupervisedSandboxPool) {
  return pool.workers().map((worker) => {
    const cordons = new Set(worker.tenants.map((tenant) => tenant.split("-")[0]));
    expect(cordons.size, `worker ${worker.pid} holds tenants of ${[...cordons].join(", ")}`).toBeLessThanOrEqual(1);
    if (cordons.size) expect(worker.cordon).toBe([...cordons][0]);
    return { cordon: worker.cordon, role: worker.role, tenants: worker.tenants.length };
  });
}

describe("maxTenantsPerWorker", () => {
  it("no shared worker holds more; a full pool grows, every tenant is served, and stats() reports the radius", async () => {
    const pool = newPool({ workers: 1, maxTenantsPerWorker: 3 });
    const runs = [];
    for (let i = 0; i < 8; i++) runs.push(await tenantRun(pool, `default-${i}`));
    for (const run of runs) await served(run);
    const workers = layout(pool);
    expect(workers.map((worker) => worker.tenants).sort()).toEqual([2, 3, 3]);
    const stats = pool.stats();
    expect(stats.maxTenantsPerWorker).toBe(3);
    expect(stats.tenantsPerWorker.map((worker) => worker.tenants).sort()).toEqual([2, 3, 3]);
  });

  it("a worker beyond the pool's count leaves once its tenants have gone", async () => {
    const pool = newPool({ workers: 1, maxTenantsPerWorker: 2 });
    for (let i = 0; i < 3; i++) await served(await tenantRun(pool, `default-${i}`));
    expect(pool.workers()).toHaveLength(2);
    pool.drop!("default-2");
    await expect.poll(() => pool.workers().length, { timeout: 5000 }).toBe(1);
    expect(pool.workers()[0].tenants.sort()).toEqual(["default-0", "default-1"]);
  });

  it("a pool that grows keeps one started spare worker, and its next growth takes it instead of waiting for a boot", async () => {
    const pool = newPool({ workers: 1, maxTenantsPerWorker: 1 });
    await served(await tenantRun(pool, "default-0"));
    expect(pool.stats().spareWorkerPid).toBeUndefined(); // within its base count, a pool keeps no spare
    await served(await tenantRun(pool, "default-1")); // the first growth boots a worker, and a spare beside it
    const spare = pool.stats().spareWorkerPid;
    expect(spare).toBeTypeOf("number");
    expect(pool.workers().map((worker) => worker.launchedPid)).not.toContain(spare);
    await served(await tenantRun(pool, "default-2"));
    const taker = pool.workers().find((worker) => worker.tenants.includes("default-2"))!;
    expect(taker.launchedPid).toBe(spare);
    expect(pool.stats().spareWorkerPid).toBeTypeOf("number");
    expect(pool.stats().spareWorkerPid).not.toBe(spare);
    // A grown worker that empties leaves, and the spare with it: a pool that stops growing keeps none.
    pool.drop!("default-2");
    await expect.poll(() => pool.stats().spareWorkerPid, { timeout: 5000 }).toBeUndefined();
    await expect.poll(() => pool.workers().length, { timeout: 5000 }).toBe(2);
  });

  it("a full cordon past the pool's memory makes room (its least recently used idle tenant goes) instead of growing", async () => {
    // workers x workerRssBudgetMb = 100 MB: two walled workers (~55 MB each) already hold that much.
    const pool = newPool({ workers: 1, maxTenantsPerWorker: 2, workerRssBudgetMb: 100 });
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push(await tenantRun(pool, `default-${i}`));
    expect(pool.workers()).toHaveLength(2);
    const fifth = await tenantRun(pool, "default-4");
    await served(fifth);
    expect(layout(pool).map((worker) => worker.tenants)).toEqual([2, 2]);
    expect(pool.stats().evictions).toBe(1);
    expect(pool.workers().flatMap((worker) => worker.tenants)).not.toContain("default-0");
    // The evicted tenant comes back on its next call (a cold start), and room is made again.
    await served(runs[0]);
    expect(pool.stats().evictions).toBe(2);
  });

  it("refuses a cap that is not a positive integer", () => {
    expect(() => createSandboxPool({ maxTenantsPerWorker: 0 })).toThrowError(/maxTenantsPerWorker: expected a positive integer/);
  });
});

describe("cordons", () => {
  it("tenants of two cordons never share a worker, even with room to spare", async () => {
    const pool = newPool({ workers: 2 });
    const runs = [];
    for (let i = 0; i < 6; i++) runs.push(await tenantRun(pool, i % 2 ? `paid-${i}` : `free-${i}`, i % 2 ? "paid" : "free"));
    for (const run of runs) await served(run);
    const workers = layout(pool);
    expect(workers.filter((worker) => worker.cordon === "free")).toHaveLength(2);
    expect(workers.filter((worker) => worker.cordon === "paid")).toHaveLength(2);
    expect(pool.stats().tenantsPerWorker.every((worker) => worker.cordon === "free" || worker.cordon === "paid")).toBe(true);
  });

  it("a quarantined tenant goes to its own cordon's quarantine worker", async () => {
    // A spin ends at the isolate's own limit; the kill grace is long so a loaded machine never needs the watchdog.
    const pool = newPool({ workers: 1, killGraceMs: 5000 });
    const free = await tenantRun(pool, "free-a", "free");
    const paid = await tenantRun(pool, "paid-a", "paid");
    // The spins end at these limits and quarantine their tenants; the limits also bound the scripts' top-level
    // code when a new limit reloads them, which a loaded machine must get through: 500 ms, not 50.
    pool.tenant("free-a", { cpuMs: 500, wallMs: 1000 });
    pool.tenant("paid-a", { cpuMs: 500, wallMs: 1000 });
    for (const run of [free, paid]) await expect(run.callHook("policy", "beforeToolCall", beforePayload("spin"))).rejects.toThrow();
    // Quarantined now (nice 19): generous limits again, so a loaded machine does not fail the calls that check where they went.
    pool.tenant("free-a", { cpuMs: 5000, wallMs: 10_000 });
    pool.tenant("paid-a", { cpuMs: 5000, wallMs: 10_000 });
    await served(free);
    await served(paid);
    const quarantine = layout(pool).filter((worker) => worker.role === "quarantine");
    expect(quarantine.map((worker) => worker.cordon).sort()).toEqual(["free", "paid"]);
    // What GET /metrics reports: the breaches' lost workers and the tenants quarantined.
    const stats = pool.stats();
    expect(stats.quarantinedTenants).toBe(2);
    expect(stats.workerRestarts).toEqual({ "killed-overdue": 0, "killed-memory": 0, crashed: 0 });
  });

  it("quarantined tenants of a cordon share its quarantine worker; a process-per-tenant one gets a quarantine process of its own", async () => {
    const pool = newPool({ workers: 1, killGraceMs: 5000 });
    const shared = [await tenantRun(pool, "free-a", "free"), await tenantRun(pool, "free-b", "free")];
    const apart = pool.tenant("free-own", { cpuMs: 5000, wallMs: 10_000 }, { cordon: "free", isolation: "process-per-tenant" });
    const own = await apart.openRun({ runId: "run-free-own", scripts: await apart.load([policy]) });
    const names = ["free-a", "free-b", "free-own"];
    // As in the test above: limits the spins end at, then generous ones for the calls that check where they went.
    for (const name of names) pool.tenant(name, { cpuMs: 500, wallMs: 1000 });
    for (const run of [...shared, own]) await expect(run.callHook("policy", "beforeToolCall", beforePayload("spin"))).rejects.toThrow();
    for (const name of names) pool.tenant(name, { cpuMs: 5000, wallMs: 10_000 });
    for (const run of [...shared, own]) await served(run);
    const quarantine = pool.workers().filter((worker) => worker.role === "quarantine");
    expect(quarantine.map((worker) => ({ isolation: worker.isolation, tenants: [...worker.tenants].sort() }))).toEqual(
      expect.arrayContaining([
        { isolation: "shared", tenants: ["free-a", "free-b"] },
        { isolation: "process-per-tenant", tenants: ["free-own"] },
      ]),
    );
    expect(quarantine).toHaveLength(2);
  });

  it("a tenant whose cordon changes moves to a worker of its new cordon once idle", async () => {
    const pool = newPool({ workers: 1 });
    const run = await tenantRun(pool, "free-mover", "free");
    await served(await tenantRun(pool, "paid-b", "paid"));
    await served(run);
    const before = pool.workers().find((worker) => worker.tenants.includes("free-mover"))!;
    pool.tenant("free-mover", undefined, { cordon: "paid" });
    await served(run);
    const after = pool.workers().find((worker) => worker.tenants.includes("free-mover"))!;
    expect(after.cordon).toBe("paid");
    expect(after.pid).not.toBe(before.pid);
    expect(after.tenants.sort()).toEqual(["free-mover", "paid-b"]);
  });

  it("refuses a cordon that is not a name, saying which", () => {
    const pool = newPool({ workers: 1 });
    expect(() => pool.tenant("x", undefined, { cordon: "" })).toThrowError(/cordon "": expected 1-64 letters/);
    expect(() => pool.tenant("x", undefined, { cordon: "a b" })).toThrowError(/cordon "a b"/);
  });
});
