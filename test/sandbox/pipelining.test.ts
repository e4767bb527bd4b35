import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { PIPELINE_DEPTH } from "../../src/sandbox/callback-gate.js";
import type { SupervisedSandboxPool, WorkerInfo } from "../../src/sandbox/index.js";
import { beforePayload, middlewareCtx, poolsClosedAfterEach, rejection, script, turn } from "./helpers.js";

/*
 * A tenant's messages pipelined to its worker (callback-gate.ts, docs/sandbox.md "One callback at a time"):
 * several are at the worker at once, and still run one at a time, in the order queued; after a breach, those
 * sent behind it do not run on the shared worker; after a long segment, those sent behind it wait for the
 * co-tenants' messages sent meanwhile; a lost worker retries those it never started.
 */

const newPool = poolsClosedAfterEach();

/** A hook that spins when the call is named "spin"; otherwise it counts its calls in the run's context and says the count. */
const counting = script(
  "counting",
  `export default {
    hooks: {
      beforeToolCall(p) {
        if (p.call.name === "spin") { while (true) {} }
        if (p.call.name === "slow") { const until = Date.now() + 300; while (Date.now() < until) {} }
        globalThis.seen = [...(globalThis.seen ?? []), p.call.name];
        return { action: "deny", reason: globalThis.seen.join(",") };
      },
    },
    middleware: [async function relay(turn, next) { return await next(turn); }],
  };`,
);

/*
 * The breach tests' limits. A spin must end at the isolate's own limit, not by the watchdog's kill, so the kill grace
 * is long. The limit also bounds the script's top-level code when the quarantine worker (nice 19, which a busy
 * machine starves) loads it for the calls sent behind the breach, so it is 1 s, not the 150 ms of the other tests.
 */
const BREACH_CPU_MS = 1000;
const BREACH_KILL_GRACE_MS = 5000;

async function openCounting(pool: SupervisedSandboxPool, tenantName: string, cpuMs = 150) {
  const tenant = pool.tenant(tenantName, { cpuMs, wallMs: 5000 });
  const run = await tenant.openRun({ runId: `run-${tenantName}`, scripts: await tenant.load([counting]) });
  const call = (name: string) => run.callHook("counting", "beforeToolCall", beforePayload(name)) as Promise<{ reason?: string }>;
  return { run, call };
}

function workerOf(pool: SupervisedSandboxPool, tenant: string): WorkerInfo | undefined {
  return pool.workers().find((info) => info.tenants.includes(tenant));
}

describe("a tenant's messages pipelined to its worker", () => {
  it("are at the worker together, and run one at a time in the order queued", async () => {
    const pool = newPool({ workers: 1 });
    const { call } = await openCounting(pool, "orderly", 5000);
    // A short call first: the load before it took long (a tenant pipelines while its segments are short).
    expect((await call("warm")).reason).toBe("warm");
    const names = ["warm", "slow", ...Array.from({ length: PIPELINE_DEPTH + 4 }, (_, at) => `n${at}`)];
    const replies = names.slice(1).map((name) => call(name));
    // The slow one and the next ones are at the worker together, up to the depth.
    expect(workerOf(pool, "orderly")?.inFlight).toBe(PIPELINE_DEPTH);
    const reasons = (await Promise.all(replies)).map((reply) => reply.reason);
    // Each call saw exactly the calls queued before it, in order: none ran beside or ahead of another.
    expect(reasons).toEqual(names.slice(1).map((_, at) => names.slice(0, at + 2).join(",")));
  });

  it("behind a long segment, the rest of those in flight are refused and sent again: a co-tenant waits for that one segment", async () => {
    const pool = newPool({ workers: 1 });
    const heavy = await openCounting(pool, "heavy", 5000);
    const other = await openCounting(pool, "other", 5000);
    expect((await heavy.call("warm")).reason).toBe("warm");
    expect((await other.call("warm")).reason).toBe("warm");
    const settled: string[] = [];
    const noted = (name: string, reply: Promise<{ reason?: string }>) =>
      reply.then((value) => {
        settled.push(name);
        return value.reason;
      });
    const slow = noted("slow", heavy.call("slow"));
    const behind = ["a", "b", "c"].map((name) => noted(name, heavy.call(name)));
    expect(workerOf(pool, "heavy")?.inFlight).toBe(4);
    // Sent after the four, to the same worker: it runs as soon as the long segment ends, not after a, b and c.
    const coTenant = noted("other", other.call("x"));
    expect(await Promise.all([slow, coTenant, ...behind])).toEqual([
      "warm,slow",
      "warm,x",
      "warm,slow,a",
      "warm,slow,a,b",
      "warm,slow,a,b,c",
    ]);
    expect(settled).toEqual(["slow", "other", "a", "b", "c"]);
    // Nothing was a breach: the tenant stays on the shared worker.
    expect(workerOf(pool, "heavy")?.role).toBe("normal");
  });

  it("only while the tenant's last message was short: a tenant of long segments sends one at a time", async () => {
    const pool = newPool({ workers: 1 });
    const { call } = await openCounting(pool, "heavy", 5000);
    expect((await call("slow")).reason).toBe("slow");
    let most = 0;
    const sample = setInterval(() => (most = Math.max(most, workerOf(pool, "heavy")?.inFlight ?? 0)), 5);
    try {
      const reasons = await Promise.all(["slow", "a", "b"].map((name) => call(name)));
      expect(reasons.map((reply) => reply.reason)).toEqual(["slow,slow", "slow,slow,a", "slow,slow,a,b"]);
    } finally {
      clearInterval(sample);
    }
    expect(most).toBe(1);
  });

  it("only while the tenant stays on that worker: those queued after its isolation changed wait, then run in its new process", async () => {
    const pool = newPool({ workers: 1 });
    const { call } = await openCounting(pool, "mover", 5000);
    expect((await call("warm")).reason).toBe("warm");
    const names = Array.from({ length: 2 * PIPELINE_DEPTH }, (_, at) => `x${at}`);
    const replies = names.map((name) => call(name));
    // The first PIPELINE_DEPTH are at the shared worker now; the change makes the tenant move once none is.
    expect(workerOf(pool, "mover")?.inFlight).toBe(PIPELINE_DEPTH);
    pool.tenant("mover", undefined, { isolation: "process-per-tenant" });
    const reasons = (await Promise.all(replies)).map((reply) => reply.reason);
    expect(reasons.slice(0, PIPELINE_DEPTH)).toEqual(
      names.slice(0, PIPELINE_DEPTH).map((_, at) => ["warm", ...names.slice(0, at + 1)].join(",")),
    );
    // In the new process, the run's context starts afresh.
    expect(reasons.slice(PIPELINE_DEPTH)).toEqual(
      names.slice(PIPELINE_DEPTH).map((_, at) => names.slice(PIPELINE_DEPTH, PIPELINE_DEPTH + at + 1).join(",")),
    );
    expect(workerOf(pool, "mover")?.isolation).toBe("process-per-tenant");
  });

  it("after a breach, those sent behind it do not run on the shared worker: they run on the quarantine worker", async () => {
    const pool = newPool({ workers: 1, killGraceMs: BREACH_KILL_GRACE_MS });
    const { call } = await openCounting(pool, "breacher", BREACH_CPU_MS);
    expect((await call("first")).reason).toBe("first");
    const spin = call("spin");
    const behind = ["a", "b", "c"].map((name) => call(name));
    expect(workerOf(pool, "breacher")?.inFlight).toBe(1 + behind.length);
    expect(workerOf(pool, "breacher")?.role).toBe("normal");
    expect((await rejection(spin)).code).toBe("SANDBOX_TIMEOUT");
    // On the shared worker they would have seen "first" in the run's context; the quarantine worker's is fresh.
    expect((await Promise.all(behind)).map((reply) => reply.reason)).toEqual(["a", "a,b", "a,b,c"]);
    expect(workerOf(pool, "breacher")?.role).toBe("quarantine");
  });

  it("a resume sent behind a breach is sent again to its callback's worker, and the callback completes", async () => {
    // The spin must end at the isolate's own limit, as a breach does, not by the watchdog killing the worker (and
    // the callback with it). See BREACH_CPU_MS.
    const pool = newPool({ workers: 1, killGraceMs: BREACH_KILL_GRACE_MS });
    const { run, call } = await openCounting(pool, "resumer", BREACH_CPU_MS);
    let spin: ReturnType<typeof rejection> | undefined;
    const relayed = run.callMiddleware("counting", "relay", turn("kept"), middlewareCtx, async (sent) => {
      // The chain starts a call that breaches; the answer to next() (a resume) follows it to the worker.
      spin = rejection(call("spin"));
      return sent;
    });
    const out = await relayed;
    expect(out.blocks[0]?.payload).toEqual({ text: "kept" });
    expect((await spin!).code).toBe("SANDBOX_TIMEOUT");
    // Nothing of the tenant runs on the shared worker any more: its next call starts afresh on the quarantine worker.
    expect((await call("after")).reason).toBe("after");
    expect(workerOf(pool, "resumer")?.role).toBe("quarantine");
  });
});

describe("a lost worker with a tenant's messages pipelined", () => {
  it("fails the one that ran and sends those behind it, never started, again elsewhere", async () => {
    const pool = newPool({
      workers: 1,
      wall: "none",
      workerPath: fileURLToPath(new URL("../fixtures/hostile-worker/worker.mjs", import.meta.url)),
    });
    const tenant = pool.tenant("liar", { cpuMs: 200, wallMs: 1000 });
    const run = await tenant.openRun({
      runId: "run-liar",
      scripts: await tenant.load([script("policy", `export default { hooks: { beforeToolCall() {} } };`)]),
    });
    const call = (orders: string) => run.callHook("policy", "beforeToolCall", beforePayload(orders));
    const pid = workerOf(pool, "liar")?.pid;
    const silent = call("silent");
    const behind = [call("honest"), call("honest"), call("honest")];
    expect(workerOf(pool, "liar")?.inFlight).toBe(1 + behind.length);
    expect((await rejection(silent)).code).toBe("SANDBOX_TIMEOUT");
    expect(await Promise.all(behind)).toEqual([undefined, undefined, undefined]);
    expect(workerOf(pool, "liar")?.pid).not.toBe(pid);
  });
});
