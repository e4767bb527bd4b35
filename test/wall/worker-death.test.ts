import { afterAll, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { script, toolCtx } from "../sandbox/helpers.js";
import { spinningWorkerOf, timedRejection, victim } from "../sandbox/redteam-helpers.js";
import { isRunning, waitUntil } from "../server/processes.js";
import { wallMissing } from "../helpers/wall.js";

/* A worker dying inside the wall costs only the calls in flight on it, as without the wall. */

const pool = createSandboxPool({ workers: 2, wall: "auto" });
afterAll(() => pool.close());

/** The spinning call's own limits: its watchdog would end it only after them (see test/sandbox/fault.test.ts). */
const LIMIT_MS = 60_000;
const spinTool = `export default { tools: [{ name: "work", description: "", handler(args) { if (args.spin) { for (;;) {} } return { done: true }; } }] };`;

async function spinningWorker(tenant: string) {
  const sandbox = pool.tenant(tenant, { cpuMs: LIMIT_MS, wallMs: LIMIT_MS });
  const run = await sandbox.openRun({ runId: `run-${tenant}`, scripts: await sandbox.load([script(`spin-${tenant}`, spinTool)]) });
  const inFlight = run.callTool(`spin-${tenant}`, "work", { spin: true }, toolCtx);
  return { run, inFlight, worker: await spinningWorkerOf(pool, tenant) };
}

it("runs its workers inside bubblewrap (auto, with bubblewrap installed)", () => {
  expect(pool.wall, wallMissing("the pool fell back to no wall")).toBe("bubblewrap");
});

it("the walled Node process killed mid-call: the call fails closed at once, not by its watchdog; the next call works", async () => {
  const good = await victim(pool);
  const { run, inFlight, worker } = await spinningWorker("doomed-inside");
  expect(worker.pid).toBeTypeOf("number");
  expect(worker.pid).not.toBe(worker.launchedPid);
  process.kill(worker.pid!, "SIGKILL");
  const error = await timedRejection(inFlight);
  expect(error.code).toBe("SANDBOX_CRASHED");
  expect(error.message).toContain("sandbox worker was lost");
  expect(error.ms).toBeLessThan(LIMIT_MS / 4);
  expect(await run.callTool("spin-doomed-inside", "work", { spin: false }, toolCtx)).toEqual({ done: true });
  await waitUntil(() => !isRunning(worker.launchedPid!), 10_000, "bwrap to exit with its sandbox");
  await good.served();
}, 60_000);

it("bwrap killed mid-call takes the walled Node process with it; the next call works", async () => {
  const { run, inFlight, worker } = await spinningWorker("doomed-outside");
  process.kill(worker.launchedPid!, "SIGKILL");
  const error = await timedRejection(inFlight);
  expect(error.code).toBe("SANDBOX_CRASHED");
  expect(error.ms).toBeLessThan(LIMIT_MS / 4);
  await waitUntil(() => !isRunning(worker.pid!), 10_000, `the walled Node process ${worker.pid} to die with bwrap`);
  expect(await run.callTool("spin-doomed-outside", "work", { spin: false }, toolCtx)).toEqual({ done: true });
}, 60_000);
