// StrykerJS over one module of scripts/mutation/modules.mjs at a time (HOOKBOX_MUTATION_MODULE); run through
// `npm run mutation`, which builds dist/ first and runs the modules one by one.
import { MODULES } from "./scripts/mutation/modules.mjs";

const name = process.env.HOOKBOX_MUTATION_MODULE;
const module = MODULES[name];
if (!module) throw new Error(`HOOKBOX_MUTATION_MODULE must be one of ${Object.keys(MODULES).join(", ")} (got ${name})`);
// Read by vitest.mutation.config.ts in the test runner processes Stryker starts (they inherit the environment).
process.env.HOOKBOX_MUTATION_TESTS = module.tests.join(",");

export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts", related: true },
  coverageAnalysis: "perTest",
  mutate: module.mutate,
  // Two cores: two test runner processes, each running its test files one at a time.
  concurrency: 2,
  timeoutMS: 20_000,
  timeoutFactor: 2,
  reporters: ["clear-text", "json"],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  ignorePatterns: [".cache", "reports", ".stryker-tmp"],
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
  // dist/ is built before Stryker copies the project (npm run mutation): child processes run it unmutated.
  disableTypeChecks: "{src,test}/**/*.{ts,mts}",
  thresholds: { high: 90, low: 75, break: null },
};
