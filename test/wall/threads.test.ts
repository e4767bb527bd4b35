import { expect, it } from "vitest";
import { Worker } from "node:worker_threads";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { repoRoot } from "../helpers/cli.js";
import { writeScripts } from "../helpers/harness.js";
import { wallLauncher } from "../helpers/wall.js";
import { beforePayload } from "../sandbox/helpers.js";

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

/*
 * Two separately built copies of hookbox in one process and one thread (an A/B bench of two trees): each copy's
 * module counts its own cgroups, so the names must differ by more than the pid, the thread and that count.
 */
it("two copies of the built library in one thread both start walled workers and answer", async () => {
  wallLauncher();
  const [script] = writeScripts({
    "policy.ts": `export default { name: "policy", hooks: { beforeToolCall() { return { action: "deny", reason: "copy" }; } } };`,
  });
  const copy = mkdtempSync(join(tmpdir(), "hookbox-copy-"));
  try {
    cpSync(join(repoRoot, "dist"), join(copy, "dist"), { recursive: true });
    cpSync(join(repoRoot, "package.json"), join(copy, "package.json"));
    cpSync(join(repoRoot, "bin"), join(copy, "bin"), { recursive: true });
    symlinkSync(join(repoRoot, "node_modules"), join(copy, "node_modules"));
    const answers = await Promise.all(
      [repoRoot, copy].map(async (tree, index) => {
        const library = (await import(pathToFileURL(join(tree, "dist/index.js")).href)) as typeof import("../../src/index.js");
        const pool = library.createSandboxPool({ workers: 1, wall: "required", workerPath: join(tree, "dist/sandbox-worker.js") });
        try {
          const tenant = pool.tenant(`copy-${index}`);
          const run = await tenant.openRun({ runId: `run-${index}`, scripts: await tenant.load([script!]) });
          return await run.callHook("policy", "beforeToolCall", beforePayload("t"));
        } finally {
          await pool.close();
        }
      }),
    );
    expect(answers).toEqual([
      { action: "deny", reason: "copy" },
      { action: "deny", reason: "copy" },
    ]);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}, 60_000);
