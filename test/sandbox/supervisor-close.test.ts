import { spawn } from "node:child_process";
import { expect, it } from "vitest";
import { Supervisor } from "../../src/sandbox/supervisor.js";
import type { Launcher } from "../../src/sandbox/wall/launcher.js";

/** A launcher whose processes are `command`: lets a test start workers that fail to start or exit at once. */
function launcherOf(command: string, args: string[]): Launcher {
  return {
    wall: "none",
    launch: (request) => spawn(command, args, { stdio: request.stdio }),
    launchSync: () => {
      throw new Error("not used");
    },
    nodePid: (child) => child.pid,
    // No pid guard here: WorkerProcess.kill never hands a launcher a child whose spawn failed (on Node 24 its
    // kill() would reach kill(0), this process group), and this test proves it.
    kill: (child) => child.kill("SIGKILL"),
  };
}

function supervisor(launcher: Launcher): Supervisor {
  return new Supervisor({
    workerPath: "/nonexistent/worker.js",
    launcher,
    workers: 2,
    graceMs: 500,
    rssBudgetBytes: 1 << 30,
    maxTenantsPerWorker: 64,
    makeRoom: () => false,
    maxFrameBytes: 1 << 24,
    onWorkerLost: () => undefined,
    onWorkerRetiring: () => undefined,
  });
}

/** Resolves with how long `promise` took, or rejects once it has taken `ms`: a hung close fails the test. */
async function within<T>(promise: Promise<T>, ms: number): Promise<number> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
  return performance.now() - started;
}

it("closes promptly when its workers failed to start (the process never spawned, so no exit event comes)", async () => {
  const pool = supervisor(launcherOf("/nonexistent/hookbox-worker-binary", []));
  pool.prewarm();
  expect(await within(pool.close(), 2000)).toBeLessThan(2000);
});

it("closes promptly right after a failed start was observed", async () => {
  const pool = supervisor(launcherOf("/nonexistent/hookbox-worker-binary", []));
  pool.prewarm();
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(await within(pool.close(), 2000)).toBeLessThan(2000);
});

it("closes promptly when its workers already exited", async () => {
  const pool = supervisor(launcherOf(process.execPath, ["-e", "process.exit(3)"]));
  pool.prewarm();
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(await within(pool.close(), 2000)).toBeLessThan(2000);
});
