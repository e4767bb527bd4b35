import { expect, it } from "vitest";
import { Worker } from "node:worker_threads";
import { join } from "node:path";
import { repoRoot } from "../helpers/cli.js";
import { writeScripts } from "../helpers/harness.js";
import { wallLauncher } from "../helpers/wall.js";

/*
 * A library host may run sandbox pools in worker threads of one process (as a test runner's thread pool does):
 * their walled workers each get a cgroup of their own, though the threads share the process id.
 */
it("two pools in two worker threads of one process both start walled workers and answer", async () => {
  wallLauncher(); // fails with an install hint where bubblewrap is missing
  const [script] = writeScripts({
    "policy.ts": `export default { name: "policy", hooks: { beforeToolCall() { return { action: "deny", reason: "thread" }; } } };`,
  });
  const inThread = (tenant: string) =>
    new Promise<{ ok: boolean; decision?: unknown; message?: string }>((resolve, reject) => {
      const worker = new Worker(join(repoRoot, "test/fixtures/threads/pool-in-thread.mjs"), {
        workerData: { library: join(repoRoot, "dist/index.js"), tenant, script: (script as { path: string }).path },
      });
      worker.once("message", (answer) => {
        resolve(answer);
        void worker.terminate();
      });
      worker.once("error", reject);
    });
  const answers = await Promise.all([inThread("thread-a"), inThread("thread-b")]);
  expect(answers).toEqual([
    { ok: true, decision: { action: "deny", reason: "thread" } },
    { ok: true, decision: { action: "deny", reason: "thread" } },
  ]);
}, 60_000);
