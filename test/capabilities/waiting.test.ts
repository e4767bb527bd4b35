import { describe, expect, it } from "vitest";
import type { CapabilityGrants } from "../../src/capabilities/grants.js";
import { hookRuntime, loopbackAndPool, runLogged } from "./hook-runtime.js";

/*
 * Waiting for the host is not the callback's time: a hook with a 300 ms wall budget waits 1.5 s for a slow
 * service and goes on; the request's own bound ends a wait that is too long (CAPABILITY_TIMEOUT). Several
 * requests of one callback run at once.
 */

const waiter = `import { defineScript } from "hookbox";
export default defineScript({
  name: "waiter",
  hooks: {
    async beforeToolCall(p) {
      const base = p.call.args.base as string;
      const started = Date.now();
      const outcome = await Promise.all([p.fetch(base + "/api/slow"), p.fetch(base + "/api/slow")]).then(
        (responses) => responses.map((r) => r.body).join(","),
        (e) => (e as any).code + " " + (e as Error).message,
      );
      console.log(JSON.stringify({ outcome, waitedMs: Date.now() - started }));
      return undefined;
    },
  },
});
`;

const shared = loopbackAndPool();

async function runWaiter(tenant: string, limits: CapabilityGrants["limits"]): Promise<{ outcome: string; waitedMs: number }> {
  const runtime = await hookRuntime({
    pool: shared.pool,
    tenant,
    script: waiter,
    args: { base: shared.loopback.url },
    limits: { wallMs: 300 },
    capabilities: { egress: [{ url: `${shared.loopback.url}/api/`, allowPrivate: true }], limits },
  });
  return runLogged(runtime, `sess_${tenant}`);
}

describe("a callback waiting for the host", () => {
  it("is not charged its wall budget while it waits; two requests run at once", async () => {
    const { outcome, waitedMs } = await runWaiter("patient", {});
    expect(outcome).toBe("late,late");
    expect(waitedMs).toBeGreaterThanOrEqual(1400); // far past the 300 ms wall budget
    expect(waitedMs).toBeLessThan(2900); // in parallel, not one after the other
  });

  it("is bounded by the request's own time limit", async () => {
    const { outcome } = await runWaiter("hurried", { fetchTimeoutMs: 200 });
    expect(outcome).toMatch(/^CAPABILITY_TIMEOUT ctx\.fetch: http:\/\/127\.0\.0\.1:\d+\/api\/slow took longer than 200 ms$/);
  });
});
