import { beforeAll, describe, expect, it } from "vitest";
import type { TenantRuntime } from "../../src/host/types.js";
import { MemoryKv } from "../../src/store/memory-kv.js";
import { writeSteps } from "../helpers/harness.js";
import { hookRuntime, loopbackAndPool, runLogged } from "./hook-runtime.js";

/*
 * Capabilities as a weapon: a script floods ctx.fetch (in parallel and in a loop, at a 2 MiB body), writes
 * huge kv values and calls the guard model in a loop. Each attack is bounded (counts, sizes, quota) and the
 * host process's event loop keeps turning: its delay is measured here, in the process that brokers the I/O
 * (real sandbox workers, a real loopback server).
 */

const attacker = `import { defineScript } from "hookbox";
export default defineScript({
  name: "attacker",
  onHookError: "fail-open",
  hooks: {
    async beforeToolCall(p) {
      const base = p.call.args.base as string;
      const attack = p.call.args.attack;
      const codes: Record<string, number> = {};
      const note = (code: string) => { codes[code] = (codes[code] ?? 0) + 1; };
      if (attack === "fetch-parallel") {
        const all = await Promise.all(Array.from({ length: 300 }, () => p.fetch(base + "/api/big").then(() => "ok", (e) => (e as any).code)));
        all.forEach(note);
      } else if (attack === "fetch-loop") {
        for (let i = 0; i < 500; i++) await p.fetch(base + "/api/ok").then(() => note("ok"), (e) => note((e as any).code));
      } else if (attack === "kv-huge") {
        const big = "x".repeat(60 * 1024);
        for (let i = 0; i < 400; i++) await p.kv.set("k" + i, big).then(() => note("ok"), (e) => note((e as any).code));
        await p.kv.set("giant", "y".repeat(6 * 1024 * 1024)).then(() => note("giant-ok"), (e) => note("giant-" + (e as any).code));
      } else if (attack === "patched-built-ins") {
        // The runtime reads its own errors with built-ins captured before any script ran.
        String.prototype.indexOf = () => -1;
        String.prototype.includes = () => false;
        await p.kv.set("giant", "y".repeat(6 * 1024 * 1024)).then(() => note("giant-ok"), (e) => note("giant-" + (e as any).code));
      } else if (attack === "guard-loop") {
        for (let i = 0; i < 200; i++) await p.model.generate({ prompt: "again" }).then(() => note("ok"), (e) => note((e as any).code));
      }
      if (attack === "warm-up") {
        await p.fetch(base + "/api/ok");
        await p.kv.set("w", 1);
        await p.model.generate({ prompt: "warm" });
      }
      console.log(JSON.stringify(codes));
      return undefined;
    },
  },
});
`;

const shared = loopbackAndPool();
beforeAll(async () => {
  // First use of fetch, the sandbox worker and the code paths costs once; the attacks are measured warm.
  await underAttack("warm-up");
}, 60_000);

function attackRuntime(attack: string): Promise<TenantRuntime> {
  return hookRuntime({
    pool: shared.pool,
    tenant: `attacker-${attack}`,
    script: attacker,
    args: { attack, base: shared.loopback.url },
    limits: { cpuMs: 2000, wallMs: 20000 },
    capabilities: {
      egress: [{ url: `${shared.loopback.url}/api/`, allowPrivate: true }],
      guardModel: { kind: "scripted", file: writeSteps(Array(30).fill({ text: "OK" })) },
    },
    kv: new MemoryKv(),
  });
}

/**
 * Watches the host's event loop: a 5 ms timer records each turn's lateness (wall) and how much of that gap the
 * main thread spent on the CPU. On a loaded machine a process is also descheduled, which makes timers late
 * without anything of ours running; a stall of the host is the main thread busy for the whole gap, so the
 * CPU figure is the one the limit applies to (the wall figure is reported too).
 */
function watchEventLoop(): () => { wallMaxMs: number; busyMaxMs: number } {
  let lastWall = performance.now();
  let lastCpu = threadCpuMs();
  let wallMaxMs = 0;
  let busyMaxMs = 0;
  const timer = setInterval(() => {
    const wall = performance.now();
    const cpu = threadCpuMs();
    wallMaxMs = Math.max(wallMaxMs, wall - lastWall - 5);
    busyMaxMs = Math.max(busyMaxMs, cpu - lastCpu);
    lastWall = wall;
    lastCpu = cpu;
  }, 5);
  return () => {
    clearInterval(timer);
    return { wallMaxMs, busyMaxMs };
  };
}

function threadCpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** Runs one attack; returns what the script saw and how long the host's event loop was stalled (ms). */
async function underAttack(attack: string): Promise<{ codes: Record<string, number>; busyMaxMs: number }> {
  const runtime = await attackRuntime(attack);
  const stop = watchEventLoop();
  const codes = await runLogged(runtime, `sess_${attack}`);
  const stall = stop();
  console.log(
    `${attack}: longest event-loop stall: main thread busy ${stall.busyMaxMs.toFixed(1)} ms (timer late by up to ${stall.wallMaxMs.toFixed(1)} ms)`,
  );
  return { codes, busyMaxMs: stall.busyMaxMs };
}

// The longest the host's main thread may stay busy between two turns of its event loop under an attack (ms).
const STALL_LIMIT_MS = 100;

describe("capabilities under attack", () => {
  it("a parallel and a looping fetch flood: 16 in flight, 50 per run, bodies cut at 1 MiB", async () => {
    await shared.loopback.clear();
    const parallel = await underAttack("fetch-parallel");
    expect(parallel.codes.CAPABILITY_QUOTA).toBeGreaterThanOrEqual(300 - 16);
    expect(parallel.codes.ok ?? 0).toBe(0); // every body was over 1 MiB
    expect(parallel.busyMaxMs).toBeLessThan(STALL_LIMIT_MS);
    const loop = await underAttack("fetch-loop");
    expect(loop.codes.ok).toBe(50);
    expect(loop.codes.CAPABILITY_QUOTA).toBe(450);
    expect(loop.busyMaxMs).toBeLessThan(STALL_LIMIT_MS);
    expect((await shared.loopback.received()).length).toBeLessThanOrEqual(16 + 50);
  }, 120_000);

  it("huge kv values: 64 KiB per value, 10 MiB per tenant, a 6 MiB value refused before it leaves the sandbox", async () => {
    const kv = await underAttack("kv-huge");
    expect(kv.codes.ok).toBeLessThanOrEqual(171);
    expect(kv.codes.ok).toBeGreaterThan(150);
    expect(kv.codes.CAPABILITY_QUOTA).toBe(400 - kv.codes.ok);
    expect(kv.codes["giant-CAPABILITY_QUOTA"]).toBe(1);
    expect(kv.busyMaxMs).toBeLessThan(STALL_LIMIT_MS);
  }, 120_000);

  it("a script that replaces String.prototype methods still gets its oversized request refused as over the quota", async () => {
    const patched = await underAttack("patched-built-ins");
    expect(patched.codes).toEqual({ "giant-CAPABILITY_QUOTA": 1 });
  }, 120_000);

  it("guard calls in a loop: 20 per run", async () => {
    const guard = await underAttack("guard-loop");
    expect(guard.codes.ok).toBe(20);
    expect(guard.codes.CAPABILITY_QUOTA).toBe(180);
    expect(guard.busyMaxMs).toBeLessThan(STALL_LIMIT_MS);
  }, 120_000);
});
