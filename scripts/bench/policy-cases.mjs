// policy_cases_per_s: `hookbox test` (docs/policy-tests.md) on 1,000 cases of a small policy, end to end: the CLI
// started as a child process, the case file checked, every case run in the sandbox, the report written. Goal: the
// 1,000 cases in under 5 s on a 2-core machine. Standalone: `node scripts/bench/policy-cases.mjs` prints the figure.
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const POLICY = `import { defineScript } from "hookbox";
export default defineScript({
  name: "bench-cases",
  hooks: {
    beforeToolCall(p) {
      if (p.call.name !== "refund") return undefined;
      return Number(p.call.args.amount) > 100 ? { action: "deny", reason: "over 100" } : undefined;
    },
  },
});
`;

export function measurePolicyCasesPerSecond({ root, cases = 1000 }) {
  const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-cases-"));
  writeFileSync(join(dir, "policy.ts"), POLICY);
  const list = Array.from({ length: cases }, (_, i) => {
    const amount = i % 200;
    return {
      name: `refund ${i}`,
      hook: "beforeToolCall",
      input: { tool: "refund", args: { amount } },
      expect: amount > 100 ? { action: "deny", reason: "over 100" } : { action: "proceed" },
    };
  });
  writeFileSync(join(dir, "policy.cases.json"), JSON.stringify({ cases: list }));
  const started = performance.now();
  const run = spawnSync(process.execPath, [join(root, "bin/hookbox.js"), "test", "--json"], {
    cwd: dir,
    encoding: "utf8",
    maxBuffer: 64 * 2 ** 20,
  });
  const seconds = (performance.now() - started) / 1000;
  const report = run.status === 0 ? JSON.parse(run.stdout) : undefined;
  if (report?.passed !== cases)
    throw new Error(`policy cases bench: expected ${cases} passed, got exit ${run.status}: ${run.stderr.slice(0, 500)}`);
  return { cases, seconds, casesPerSecond: cases / seconds };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const measured = measurePolicyCasesPerSecond({ root: join(fileURLToPath(import.meta.url), "../../..") });
  console.log(`policy_cases_per_s ${Math.round(measured.casesPerSecond)} (${measured.cases} cases in ${measured.seconds.toFixed(2)} s)`);
}
