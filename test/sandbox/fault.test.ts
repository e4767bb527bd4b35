import { afterAll, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { script, toolCtx } from "./helpers.js";
import { timedRejection, victim } from "./redteam-helpers.js";

const pool = createSandboxPool({ workers: 2 });
afterAll(() => pool.close());

it("a worker killed mid-call fails the call closed within a second; the next call succeeds", async () => {
  const good = await victim(pool);
  const sandbox = pool.tenant("doomed", { cpuMs: 20_000, wallMs: 20_000 });
  const manifests = await sandbox.load([
    script(
      "slow",
      `export default { tools: [{ name: "work", description: "", handler(args) { if (args.spin) { for (;;) {} } return { done: true }; } }] };`,
    ),
  ]);
  const run = await sandbox.openRun({ runId: "r", scripts: manifests });
  const inFlight = run.callTool("slow", "work", { spin: true }, toolCtx);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const worker = pool.workers().find((info) => info.tenants.includes("doomed"));
  expect(worker?.pid).toBeTypeOf("number");
  const killedAt = performance.now();
  process.kill(worker!.pid!, "SIGKILL");
  const error = await timedRejection(inFlight);
  expect(error.code).toBe("SANDBOX_CRASHED");
  expect(performance.now() - killedAt).toBeLessThan(1000);
  // The next call of the same tenant gets a fresh worker and works; so does everyone else.
  expect(await run.callTool("slow", "work", { spin: false }, toolCtx)).toEqual({ done: true });
  expect(pool.workers().some((info) => info.pid === worker!.pid)).toBe(false);
  await good.served();
});
