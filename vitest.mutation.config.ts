import { defineConfig } from "vitest/config";

/*
 * The test configuration Stryker runs (stryker.config.mjs): the project's, less the global setup (dist/ is built
 * once before Stryker starts, unmutated) and only the test files of the module under mutation.
 */
const tests = process.env.HOOKBOX_MUTATION_TESTS?.split(",").filter(Boolean);
if (!tests?.length) throw new Error("vitest.mutation.config.ts: HOOKBOX_MUTATION_TESTS is empty (run it through npm run mutation)");

export default defineConfig({
  test: {
    include: tests,
    testTimeout: Number(process.env.HOOKBOX_MUTATION_TEST_TIMEOUT_MS ?? 30_000),
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
