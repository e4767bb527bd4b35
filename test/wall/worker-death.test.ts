import { afterAll, expect, it } from "vitest";
import { createSandboxPool, type WorkerInfo } from "../../src/sandbox/index.js";
import { script, toolCtx } from "../sandbox/helpers.js";
import { timedRejection, victim } from "../sandbox/redteam-helpers.js";
import { isRunning, waitUntil } from "../server/processes.js";
import { wallMissing } from "../helpers/wall.js";

/* A worker dying inside the wall costs only the calls in flight on it, as without the wall. */

const pool = createSandboxPool({ workers: 2, wall: "auto" });
afterAll(() => pool.close());

const spinTool = `export default { tools: [{ name: "work", description: "", handler(args) { if (args.spin) { for (;;) {} } return { done: true }; } }] };`;

async function spinningWorker(tenant: string) {
  const sandbox = pool.tenant(tenant, { cpuMs: 20_000, wallMs: 20_000 });
  const run = await sandbox.openRun({ runId: `run-${tenant}`, scripts: await sandbox.load([script(`spin-${tenant}`, spinTool)]) });
  const inFlight = run.callTool(`spin-${tenant}`, "work", { spin: true }, toolCtx);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const worker = pool.workers().find((info) => info.tenants.includes(tenant)) as WorkerInfo;
  return { run, inFlight, worker };
}

it("runs its workers inside bubblewrap (auto, with bubblewrap installed)", () => {
  expect(pool.wall, wallMissing("the pool fell back to no wall")).toBe("bubblewrap");
});

it("the walled Node process killed mid-call: the call fails closed within a second, the next call works", async () => {
  const good = await victim(pool);
  const { run, inFlight, worker } = await spinningWorker("doomed-inside");
  expect(worker.pid).toBeTypeOf("number");
  expect(worker.pid).not.toBe(worker.launchedPid);
  const killedAt = performance.now();
  process.kill(worker.pid!, "SIGKILL");
  const error = await timedRejection(inFlight);
  expect(error.code).toBe("SANDBOX_CRASHED");
  expect(performance.now() - killedAt).toBeLessThan(1000);
  expect(await run.callTool("spin-doomed-inside", "work", { spin: false }, toolCtx)).toEqual({ done: true });
  await waitUntil(() => !isRunning(worker.launchedPid!), 3000, "bwrap to exit with its sandbox");
  await good.served();
});

it("bwrap killed mid-call takes the walled Node process with it; the next call works", async () => {
  const { run, inFlight, worker } = await spinningWorker("doomed-outside");
  process.kill(worker.launchedPid!, "SIGKILL");
  expect((await timedRejection(inFlight)).code).toBe("SANDBOX_CRASHED");
  await waitUntil(() => !isRunning(worker.pid!), 3000, `the walled Node process ${worker.pid} to die with bwrap`);
  expect(await run.callTool("spin-doomed-outside", "work", { spin: false }, toolCtx)).toEqual({ done: true });
});
