import { describe, expect, it } from "vitest";
import type { SupervisedSandboxPool, WorkerInfo } from "../../src/sandbox/index.js";
import { beforePayload, poolsClosedAfterEach, rejection, script } from "./helpers.js";

/*
 * Held replies (wire/protocol.ts, "Held replies"; docs/sandbox.md "Pipelining"): the worker may keep a reply while
 * the same tenant's next message runs, to write both in one write. A reply is held only while the next message is
 * its own tenant's and the held ones took at most REPLY_HOLD_MS; the watchdog never blames a tenant for another's
 * message, and a held reply is never taken for an overrun of the message that ran while it waited.
 */

const newPool = poolsClosedAfterEach();

/** What the hook does, by the tool call's name. */
const policy = script(
  "policy",
  `export default {
    hooks: {
      beforeToolCall(p) {
        const spin = (ms) => { const until = Date.now() + ms; while (Date.now() < until) {} };
        if (p.call.name === "busy20") spin(20);
        if (p.call.name === "busy300") spin(300);
        if (p.call.name === "overshoot") { const s = "a".repeat(2e7); for (let i = 0; i < 20; i++) s.replace(/a/g, "bb"); }
        return { action: "deny", reason: p.call.name };
      },
    },
  };`,
);

async function openTenant(pool: SupervisedSandboxPool, name: string, limits: { cpuMs: number; wallMs: number; memoryMb?: number }) {
  const tenant = pool.tenant(name, limits);
  const run = await tenant.openRun({ runId: `run-${name}`, scripts: await tenant.load([policy]) });
  /** The hook's call; `at`: when its reply settled the call (performance.now()). */
  const call = (name: string) => {
    const reply = run.callHook("policy", "beforeToolCall", beforePayload(name)) as Promise<{ reason?: string }>;
    return Object.assign(reply, {
      at: reply.then(
        () => performance.now(),
        () => Number.NaN,
      ),
    });
  };
  return { call };
}

function workerOf(pool: SupervisedSandboxPool, tenant: string): WorkerInfo | undefined {
  return pool.workers().find((info) => info.tenants.includes(tenant));
}

describe("held replies", () => {
  it("a short message's reply waits for the same tenant's next one; one that took longer than REPLY_HOLD_MS goes before it runs", async () => {
    const pool = newPool({ workers: 1, killGraceMs: 200 });
    const { call } = await openTenant(pool, "mixed", { cpuMs: 1000, wallMs: 5000 });
    // A short call first, so the next two are at the worker together (pipelining: the last segment was short).
    expect((await call("warm")).reason).toBe("warm");
    const [quick, long] = [call("quick"), call("busy300")];
    expect(workerOf(pool, "mixed")?.inFlight).toBe(2);
    expect([(await quick).reason, (await long).reason]).toEqual(["quick", "busy300"]);
    // Held: the quick one's reply came in one write with the long one's.
    expect((await long.at) - (await quick.at)).toBeLessThan(100);
    expect((await call("warm")).reason).toBe("warm");
    const [slower, longer] = [call("busy20"), call("busy300")];
    expect([(await slower).reason, (await longer).reason]).toEqual(["busy20", "busy300"]);
    // 20 ms is past the hold's window: that reply went before the long one started.
    expect((await longer.at) - (await slower.at)).toBeGreaterThan(200);
    // Nothing was taken for an overrun.
    expect(pool.stats().workerRestarts).toEqual({ "killed-overdue": 0, "killed-memory": 0, crashed: 0 });
  });

  it("two tenants on one worker: a reply never waits while another tenant's message runs, so its overrun is blamed on it alone", async () => {
    const pool = newPool({ workers: 1, killGraceMs: 200 });
    const limits = { cpuMs: 50, wallMs: 1000, memoryMb: 256 };
    const occupier = await openTenant(pool, "occupier", { cpuMs: 1000, wallMs: 5000 });
    const victim = await openTenant(pool, "victim", limits);
    const attacker = await openTenant(pool, "attacker", limits);
    expect(workerOf(pool, "victim")?.pid).toBe(workerOf(pool, "attacker")?.pid);
    // While the occupier's call runs, the victim's and the attacker's messages wait in the pipe: the worker reads them together.
    const occupied = occupier.call("busy300");
    const served = victim.call("quick");
    const attack = rejection(attacker.call("overshoot"));
    expect((await occupied).reason).toBe("busy300");
    expect((await served).reason).toBe("quick");
    const error = await attack;
    expect(error.code).toBe("SANDBOX_TIMEOUT");
    expect(error.message).toContain("the sandbox worker was killed");
    expect(pool.stats().workerRestarts["killed-overdue"]).toBe(1);
    // The attacker alone is quarantined; the victim is served where it was placed again, on a normal worker.
    pool.tenant("attacker", { cpuMs: 5000, wallMs: 10_000 });
    expect((await attacker.call("calm")).reason).toBe("calm");
    expect(workerOf(pool, "attacker")?.role).toBe("quarantine");
    expect((await victim.call("again")).reason).toBe("again");
    expect(workerOf(pool, "victim")?.role).toBe("normal");
    expect(pool.stats().quarantinedTenants).toBe(1);
  });

  it("a tenant's overrun behind its own held reply: the watchdog blames that tenant, never the one queued behind", async () => {
    const pool = newPool({ workers: 1, killGraceMs: 200 });
    const limits = { cpuMs: 50, wallMs: 1000, memoryMb: 256 };
    const attacker = await openTenant(pool, "attacker", limits);
    const bystander = await openTenant(pool, "bystander", limits);
    expect((await attacker.call("warm")).reason).toBe("warm");
    // The quick call's reply may wait while the overshoot runs (the same tenant's, sent with it).
    const quick = rejection(attacker.call("quick"));
    const attack = rejection(attacker.call("overshoot"));
    const behind = bystander.call("behind");
    expect(workerOf(pool, "attacker")?.inFlight).toBe(3);
    // The watchdog blames the oldest message: the quick one, whose reply was held; the bound says so.
    const blamed = await quick;
    expect(blamed.code).toBe("SANDBOX_TIMEOUT");
    expect(blamed.message).toContain("ms for a reply held while the tenant's next message ran");
    // The overshoot, never seen to start, is sent again: to the quarantine worker, where it is blamed alone.
    expect((await attack).code).toBe("SANDBOX_TIMEOUT");
    // The bystander's message, queued behind, never ran there: it is served elsewhere, and it is not quarantined.
    expect((await behind).reason).toBe("behind");
    expect(workerOf(pool, "bystander")?.role).toBe("normal");
    expect(pool.stats().quarantinedTenants).toBe(1);
  });
});
