import { afterAll, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { script, toolCtx } from "./helpers.js";
import { spinningWorkerOf, timedRejection, victim } from "./redteam-helpers.js";

const pool = createSandboxPool({ workers: 2 });
afterAll(() => pool.close());

/**
 * The spinning call's own limits. Its watchdog would end it only after them (SANDBOX_TIMEOUT), so a SANDBOX_CRASHED
 * long before is the host noticing the death itself; how fast it notices is a speed goal for the bench.
 */
const LIMIT_MS = 60_000;

it("a worker killed mid-call fails the call closed at once, not by its watchdog; the next call succeeds", async () => {
  const good = await victim(pool);
  const sandbox = pool.tenant("doomed", { cpuMs: LIMIT_MS, wallMs: LIMIT_MS });
  const manifests = await sandbox.load([
    script(
      "slow",
      `export default { tools: [{ name: "work", description: "", handler(args) { if (args.spin) { for (;;) {} } return { done: true }; } }] };`,
    ),
  ]);
  const run = await sandbox.openRun({ runId: "r", scripts: manifests });
  const inFlight = run.callTool("slow", "work", { spin: true }, toolCtx);
  const worker = await spinningWorkerOf(pool, "doomed");
  const crashedBefore = pool.stats().workerRestarts.crashed;
  process.kill(worker.pid!, "SIGKILL");
  const error = await timedRejection(inFlight);
  expect(error.code).toBe("SANDBOX_CRASHED");
  expect(error.message).toContain("sandbox worker was lost");
  expect(error.ms).toBeLessThan(LIMIT_MS / 4);
  // The next call of the same tenant gets a fresh worker and works; so does everyone else.
  expect(await run.callTool("slow", "work", { spin: false }, toolCtx)).toEqual({ done: true });
  expect(pool.workers().some((info) => info.pid === worker.pid)).toBe(false);
  // GET /metrics counts it (hookbox_sandbox_worker_restarts_total{reason="crashed"}).
  expect(pool.stats().workerRestarts.crashed).toBe(crashedBefore + 1);
  await good.served();
}, 60_000);
