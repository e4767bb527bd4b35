// Prints the suite's totals as one plain line ("N passed, N failed") from vitest's JSON report,
// so any CI log reader can count the tests without knowing vitest's own format.
import { readFileSync } from "node:fs";

const report = JSON.parse(readFileSync(process.argv[2] ?? ".cache/vitest.json", "utf8"));
const skipped = report.numPendingTests + report.numTodoTests;
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exitCode = report.numFailedTests > 0 || report.numTotalTests === 0 ? 1 : 0;
