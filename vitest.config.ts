import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Builds dist/ once: sandbox tests fork dist/sandbox-worker.js.
    globalSetup: ["test/global-setup.ts"],
    include: ["test/**/*.test.ts", "src/**/*.test.ts", "codegen/**/*.test.ts"],
    // Sandbox tests spawn real worker processes; a 2-core machine needs room.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // A poll waits on real processes (a served run, Chromium, SSE); the default 1 s is too short on a loaded machine.
    // It returns as soon as its condition holds, and stays under testTimeout so a failure names the poll.
    expect: { poll: { timeout: 20_000 } },
    pool: "forks",
    maxWorkers: 2,
  },
});
