// StrykerJS over one module of scripts/mutation/modules.mjs at a time (HOOKBOX_MUTATION_MODULE); run through
// `npm run mutation`, which builds dist/ first and runs the modules one by one.
import { MODULES } from "./scripts/mutation/modules.mjs";

const name = process.env.HOOKBOX_MUTATION_MODULE;
const module = MODULES[name];
if (!module) throw new Error(`HOOKBOX_MUTATION_MODULE must be one of ${Object.keys(MODULES).join(", ")} (got ${name})`);
// Read by vitest.mutation.config.ts in the test runner processes Stryker starts (they inherit the environment).
process.env.HOOKBOX_MUTATION_TESTS = module.tests.join(",");
// A module whose tests start bubblewrap sets longer bounds (modules.mjs): a test slowed by a loaded machine must
// neither fail on vitest's timeout nor pass Stryker's, or its mutant would count as killed when nothing detected it.
process.env.HOOKBOX_MUTATION_TEST_TIMEOUT_MS = String(module.testTimeoutMs ?? 30_000);

export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts", related: true },
  coverageAnalysis: "perTest",
  mutate: module.mutate,
  // Two cores: at most two test runner processes, each running its test files one at a time
  // (HOOKBOX_MUTATION_CONCURRENCY=1 on a machine other work shares).
  concurrency: Number(process.env.HOOKBOX_MUTATION_CONCURRENCY ?? 2),
  // A module's static mutants (in code run once at import, such as constant tables) each need a fresh test
  // process for every test: modules.mjs says which modules skip them, and docs/security.md counts them apart.
  ignoreStatic: module.ignoreStatic ?? false,
  timeoutMS: module.timeoutMS ?? 20_000,
  timeoutFactor: 2,
  reporters: ["clear-text", "json", "progress-append-only"],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  ignorePatterns: [".cache", "reports", ".stryker-tmp"],
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
  // dist/ is built before Stryker copies the project (npm run mutation): child processes run it unmutated.
  disableTypeChecks: "{src,test}/**/*.{ts,mts}",
  thresholds: { high: 90, low: 75, break: null },
};
