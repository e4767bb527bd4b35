import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxPool, type SupervisedSandboxPool, type WorkerInfo } from "../../src/sandbox/index.js";
import type { LogEntry, SandboxLimits } from "../../src/sandbox/api.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { writeScripts, writeSteps } from "../helpers/harness.js";
import { waitUntil } from "../server/processes.js";
import { beforePayload, rejection, script } from "./helpers.js";

/*
 * What the host trusts a worker for (docs/security.md): the reports it believes, each told as a lie by a
 * stand-in for a worker taken over (test/fixtures/hostile-worker, tenant "liar", the hook's tool name saying
 * which lie). Each lie costs what the table says and no more: it reaches only the liar's own calls and runs,
 * the host goes on, and a report outside the protocol's shape is a breach like any other.
 */

const pools: SupervisedSandboxPool[] = [];
afterAll(() => Promise.all(pools.map((pool) => pool.close())));

function hostilePool(): SupervisedSandboxPool {
  const pool = createSandboxPool({
    workers: 1,
    wall: "none",
    workerPath: fileURLToPath(new URL("../fixtures/hostile-worker/worker.mjs", import.meta.url)),
  });
  pools.push(pool);
  return pool;
}

const policy = script("policy", `export default { hooks: { beforeToolCall() {} } };`);
let runs = 0;

/**
 * Generous limits by default: a reply of megabytes parsed on a loaded machine must not meet the watchdog (the
 * host's time for a reply is twice the segment budget plus grace); the test of ignored limits sets its own.
 */
const GENEROUS = { cpuMs: 5000, wallMs: 10_000 };

async function openAs(pool: SupervisedSandboxPool, tenantName: string, limits: Partial<SandboxLimits> = GENEROUS) {
  const tenant = pool.tenant(tenantName, limits);
  const logs: LogEntry[] = [];
  const run = await tenant.openRun({
    runId: `run-${tenantName}-${++runs}`,
    scripts: await tenant.load([policy]),
    onLog: (entry) => logs.push(entry),
  });
  /** One hook call; the stand-in reads the payload's tool name as the lie to tell. */
  const call = (orders = "honest") => run.callHook("policy", "beforeToolCall", beforePayload(orders));
  return { run, logs, call };
}

function workerOf(pool: SupervisedSandboxPool, tenant: string): WorkerInfo | undefined {
  return pool.workers().find((info) => info.tenants.includes(tenant));
}

describe("the reports the host believes, and what a lie costs", () => {
  it("cpuMs: counted to the liar's own run only; a negative one breaks the protocol", async () => {
    const pool = hostilePool();
    const honest = await openAs(pool, "honest");
    const liar = await openAs(pool, "liar");
    expect(await honest.call()).toBeUndefined();
    expect(await liar.call("cpu-huge")).toBeUndefined();
    expect(liar.run.cpuMs()).toBe(1e9);
    expect(honest.run.cpuMs()).toBe(0);
    const error = await rejection(liar.call("cpu-negative"));
    expect(error.code).toBe("SANDBOX_CRASHED");
    expect(error.message).toContain("it broke the protocol: a message the protocol does not allow (cpuMs:");
    expect(await honest.call()).toBeUndefined();
  });

  it("breach: the tenant named moves to the quarantine worker and is still served; a co-tenant stays", async () => {
    const pool = hostilePool();
    const honest = await openAs(pool, "honest");
    const liar = await openAs(pool, "liar");
    expect(await honest.call()).toBeUndefined();
    // The call itself succeeded: the lie is only the breach beside it.
    expect(await liar.call("breach")).toBeUndefined();
    expect(pool.stats().quarantinedTenants).toBe(1);
    expect(await liar.call()).toBeUndefined();
    expect(workerOf(pool, "liar")?.role).toBe("quarantine");
    expect(await honest.call()).toBeUndefined();
    expect(workerOf(pool, "honest")?.role).toBe("normal");
  });

  it("isolates and workerMs: shown in the pool's diagnostics only; a negative count breaks the protocol", async () => {
    const pool = hostilePool();
    const liar = await openAs(pool, "liar");
    expect(await liar.call("diagnostics")).toBeUndefined();
    expect(workerOf(pool, "liar")).toMatchObject({ isolates: 123456 });
    expect(workerOf(pool, "liar")!.meanWorkerMs).toBeGreaterThan(1e8);
    expect(await liar.call()).toBeUndefined();
    const error = await rejection(liar.call("isolates-negative"));
    expect(error.code).toBe("SANDBOX_CRASHED");
    expect(error.message).toContain("it broke the protocol: a message the protocol does not allow (isolates:");
  });

  it("logs: reach only the liar's own run, never a run of another tenant on the worker", async () => {
    const pool = hostilePool();
    const honest = await openAs(pool, "honest");
    const liar = await openAs(pool, "liar");
    expect(await honest.call()).toBeUndefined();
    expect(await liar.call("logs")).toBeUndefined();
    expect(honest.logs).toEqual([]);
    // Each line the worker sent for the liar's run, the one it claims is another tenant's included, is the liar's.
    expect(liar.logs.length).toBe(51);
    expect(liar.logs.every((entry) => entry.tenant === "liar")).toBe(true);
  });

  it("logs: each reply is dispatched once, whatever message it answers (a coverage reply's line reaches its run once)", async () => {
    const pool = hostilePool();
    const liar = await openAs(pool, "liar");
    expect(await liar.run.coverage()).toEqual([]);
    // The gate hands the reply over after the read's own promise settles: give it that turn.
    await new Promise((resolve) => setImmediate(resolve));
    expect(liar.logs.map((entry) => entry.message)).toEqual(["counted"]);
  });

  it("logs: as many and as long as the worker says, still bounded by the run's maxRunBytes at every event", async () => {
    const pool = hostilePool();
    const maxRunBytes = 1024 * 1024;
    const runtime = await createTenantRuntime(
      {
        name: "liar",
        scripts: writeScripts({ "policy.ts": `export default { hooks: { beforeToolCall() {} } };` }),
        model: { kind: "scripted", file: writeSteps([{ toolCalls: [{ id: "c1", name: "logs", args: {} }] }, { text: "done" }]) },
        budgets: { maxRunBytes },
        limits: GENEROUS,
      },
      pool,
      { host: { tools: [{ name: "logs", description: "n", parameters: { type: "object" }, handler: () => ({}) }] } },
    );
    const handle = runtime.start({ sessionId: "sess_logs", prompt: "go" });
    const events: HookboxEvent[] = [];
    for await (const event of handle.events()) events.push(event);
    const result = await handle.wait();
    expect(result.status).toBe("failed");
    expect(result.errorCode).toBe("RUN_BUDGET");
    const logs = events.filter((event) => event.type === "log");
    // 50 lines of 100,000 characters were sent: only what fits the budget was kept.
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.length).toBeLessThan(50);
    expect(events.reduce((sum, event) => sum + JSON.stringify(event).length, 0)).toBeLessThanOrEqual(maxRunBytes + 64 * 1024);
  });

  it("the in-isolate limits: a worker that ignores them is killed at budget plus grace, the call is SANDBOX_TIMEOUT", async () => {
    const pool = hostilePool();
    const honest = await openAs(pool, "honest");
    const liar = await openAs(pool, "liar", { cpuMs: 200, wallMs: 1000 });
    const pid = workerOf(pool, "liar")?.pid;
    const error = await rejection(liar.call("silent"));
    expect(error.code).toBe("SANDBOX_TIMEOUT");
    await waitUntil(() => !pool.workers().some((worker) => worker.pid === pid), 10_000, "the silent worker to be gone");
    expect(await honest.call()).toBeUndefined();
  });

  it("an outcome's value: validated against the hook's contract (a value inside it is believed)", async () => {
    const pool = hostilePool();
    const liar = await openAs(pool, "liar");
    expect(await liar.call("deny")).toEqual({ action: "deny", reason: "the worker says so" });
    const error = await rejection(liar.call("outside-contract"));
    expect(error.code).toBe("HOOK_CONTRACT");
  });

  it("which call an outcome is for: one for a call not in flight settles nothing, and a reply that leaves its own call unanswered is a breach", async () => {
    const pool = hostilePool();
    const honest = await openAs(pool, "honest");
    const liar = await openAs(pool, "liar");
    // Before the rule, the call waited for good: the worker's reply had ended the message, the watchdog had nothing to watch.
    const error = await rejection(liar.call("other-call"));
    expect(error.code).toBe("SANDBOX_CRASHED");
    expect(error.message).toContain("it broke the protocol: its reply to message");
    expect(error.message).toContain("left policy: beforeToolCall unanswered");
    expect(await honest.call()).toBeUndefined();
  });

  it("a refusal: only of a message sent behind a breach the worker reported; one without is a breach, not a loop of resends", async () => {
    const pool = hostilePool();
    const honest = await openAs(pool, "honest");
    const liar = await openAs(pool, "liar");
    const error = await rejection(liar.call("refuse"));
    expect(error.code).toBe("SANDBOX_CRASHED");
    expect(error.message).toContain("it broke the protocol: it refused message");
    expect(await honest.call()).toBeUndefined();
  });

  it("a refusal behind a long segment it reported (a stop without a breach) is believed: the message is sent again and answered", async () => {
    const pool = hostilePool();
    const liar = await openAs(pool, "liar");
    const pid = workerOf(pool, "liar")?.pid;
    const long = liar.call("long");
    const behind = liar.call("behind-long");
    expect(workerOf(pool, "liar")?.inFlight).toBe(2);
    expect(await long).toBeUndefined();
    expect(await behind).toBeUndefined();
    expect(workerOf(pool, "liar")).toMatchObject({ pid, role: "normal" });
  });

  it("a failed call's error: a worker's codes only (CANCELLED breaks the protocol), its text clipped", async () => {
    const pool = hostilePool();
    const liar = await openAs(pool, "liar");
    const cancelled = await rejection(liar.call("error-cancelled"));
    expect(cancelled.code).toBe("SANDBOX_CRASHED");
    expect(cancelled.message).toContain("it broke the protocol: a message the protocol does not allow (outcomes.0.error.code:");
    const huge = await rejection(liar.call("error-huge"));
    expect(huge.code).toBe("SCRIPT_ERROR");
    expect(huge.message.length).toBeLessThan(4096 + 200);
  });
});
