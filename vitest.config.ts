import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Builds dist/ once: sandbox tests fork dist/sandbox-worker.js.
    globalSetup: ["test/global-setup.ts"],
    include: ["test/**/*.test.ts", "src/**/*.test.ts", "codegen/**/*.test.ts"],
    // Sandbox tests spawn real worker processes; a 2-core machine needs room.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
