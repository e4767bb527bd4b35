import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createSandboxPool, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import type { CapabilityEvent, HookboxEvent } from "../../src/events/types.js";
import type { RunResult, TenantRuntime } from "../../src/host/types.js";
import { MemoryKv } from "../../src/store/memory-kv.js";
import { hookRuntime } from "./hook-runtime.js";

/*
 * A script that keeps calling a capability after the run's count for it is spent: each refusal used to be a
 * whole event (a 2,000-character URL in each), so one tool call made megabytes of events, all of them kept by
 * the host, and the run's byte budget was looked at only later. Now the first refusal is an event, the rest a
 * count in one event at the run's end, and the byte budget holds at every event. Real sandbox, real loop; the
 * host's retained heap is measured after a full collection, with the run's handle (and its events) alive.
 */

setFlagsFromString("--expose-gc");
const collect = runInNewContext("gc") as () => void;

const flooder = `import { defineScript } from "hookbox";
export default defineScript({
  name: "flooder",
  onHookError: "fail-open",
  hooks: {
    async beforeToolCall(p) {
      const codes: Record<string, number> = {};
      const times = Number(p.call.args.times);
      if (p.call.args.attack === "fetch") {
        const url = "http://127.0.0.1:9/outside/" + "q".repeat(2000);
        for (let i = 0; i < times; i++) {
          const code = await p.fetch(url).then(() => "ok", (e) => (e as any).code);
          codes[code] = (codes[code] ?? 0) + 1;
        }
      } else {
        for (let i = 0; i < times; i++) {
          const code = await p.kv.set("k".repeat(200) + i, i).then(() => "ok", (e) => (e as any).code);
          codes[code] = (codes[code] ?? 0) + 1;
        }
      }
      console.log(JSON.stringify(codes));
      return undefined;
    },
  },
});
`;

let pool: SupervisedSandboxPool;
beforeAll(() => {
  pool = createSandboxPool({ workers: 1 });
});
afterAll(() => pool?.close());

async function flood(
  tenant: string,
  args: Record<string, string>,
  budgets?: { maxRunBytes: number },
): Promise<{ runtime: TenantRuntime; events: HookboxEvent[]; result: RunResult }> {
  const runtime = await hookRuntime({
    pool,
    tenant,
    script: flooder,
    args,
    limits: { cpuMs: 3000, wallMs: 60_000 },
    ...(budgets ? { budgets } : {}),
    capabilities: {
      egress: [{ url: "http://127.0.0.1:9/api/", allowPrivate: true }],
      limits: { maxFetchesPerRun: 10 },
    },
    kv: new MemoryKv(),
  });
  const handle = runtime.start({ sessionId: `sess_${tenant}`, prompt: "go" });
  const events: HookboxEvent[] = [];
  for await (const event of handle.events()) events.push(event);
  return { runtime, events, result: await handle.wait() };
}

const bytesOf = (events: HookboxEvent[]) => events.reduce((sum, event) => sum + JSON.stringify(event).length, 0);

describe("refused capability calls", () => {
  it("past the quota: the first refusal is an event, the rest one count at the end; event bytes and the host's heap stay bounded", async () => {
    // Warm: the first run pays for loading, compiling and the worker.
    await flood("warm-up", { attack: "fetch", times: "20" });
    collect();
    const before = process.memoryUsage().heapUsed;
    const { events, result } = await flood("fetch-flood", { attack: "fetch", times: "10000" });
    collect();
    const retained = process.memoryUsage().heapUsed - before;
    const bytes = bytesOf(events);
    console.log(
      `10,000 refused fetches with a 2,000-character URL: ${events.length} events, ${bytes} bytes; host heap retained ${(retained / 1e6).toFixed(1)} MB`,
    );
    expect(bytes).toBeLessThan(32 * 1024);
    expect(retained).toBeLessThan(8 * 1024 * 1024);
    expect(result.status).toBe("completed");
    const codes = JSON.parse((events.find((event) => event.type === "log") as { message: string }).message);
    expect(codes).toEqual({ CAPABILITY_DENIED: 10, CAPABILITY_QUOTA: 9990 });

    const capability = events.filter((event): event is CapabilityEvent & HookboxEvent => event.type === "capability");
    expect(capability.filter((event) => event.errorCode === "CAPABILITY_DENIED")).toHaveLength(10);
    const quota = capability.filter((event) => event.errorCode === "CAPABILITY_QUOTA");
    expect(quota).toHaveLength(2);
    expect(quota[0]).toMatchObject({ kind: "fetch", script: "flooder", ok: false, method: "GET" });
    expect(quota[0].refusals).toBeUndefined();
    expect(quota[1]).toMatchObject({ kind: "fetch", script: "flooder", ok: false, refusals: 9989 });
    // The event comes before run-finished, so every reader gets it.
    expect(events.indexOf(quota[1])).toBeLessThan(events.length - 1);
    for (const event of capability) expect((event.url ?? "").length).toBeLessThanOrEqual(512);
  }, 120_000);

  it("the run's byte budget holds at every event: past it nothing more is recorded and the run stops at once", async () => {
    const maxRunBytes = 64 * 1024;
    const { events, result } = await flood("kv-flood", { attack: "kv", times: "1000" }, { maxRunBytes });
    expect(result).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
    expect(result.reason).toMatch(/^the run's events reached \d+ bytes, over the run budget of 65536$/);
    const last = events.at(-1)!;
    expect(last).toMatchObject({ type: "run-finished", status: "failed", errorCode: "RUN_BUDGET" });
    // Everything before run-finished fits in the budget; seqs stay gap-free.
    expect(bytesOf(events.slice(0, -1))).toBeLessThanOrEqual(maxRunBytes);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    // The hook never got to log its count: the run ended while it was still writing.
    expect(events.some((event) => event.type === "log")).toBe(false);
  }, 120_000);
});
