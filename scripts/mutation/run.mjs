// npm run mutation [-- module...]: builds dist/ once, then runs StrykerJS over each module of modules.mjs in turn
// (all of them when none is named), and prints each module's score from its JSON report and the survivors that
// docs/mutation/<module>.md does not explain yet.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { MODULES } from "./modules.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const asked = process.argv.slice(2);
for (const name of asked) if (!MODULES[name]) throw new Error(`unknown module ${name}: one of ${Object.keys(MODULES).join(", ")}`);
const names = asked.length ? asked : Object.keys(MODULES);

execFileSync(process.execPath, [join(root, "scripts/build.mjs")], { cwd: root, stdio: "inherit" });
const scores = {};
for (const name of names) {
  process.stderr.write(`\n== mutation: ${name} (${MODULES[name].mutate.join(" ")}) ==\n`);
  const run = spawnSync(process.execPath, [join(root, "node_modules/@stryker-mutator/core/bin/stryker.js"), "run", "stryker.config.mjs"], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, HOOKBOX_MUTATION_MODULE: name },
  });
  if (run.status !== 0) throw new Error(`stryker failed on ${name} (exit ${run.status})`);
  scores[name] = score(JSON.parse(readFileSync(join(root, "reports/mutation", `${name}.json`), "utf8")));
}
for (const [name, s] of Object.entries(scores))
  process.stdout.write(
    `${name}: ${s.score.toFixed(1)}% (${s.killed} killed, ${s.timeout} timed out, ${s.survived} survived, ${s.noCoverage} no coverage)\n`,
  );
// Every survivor needs a reason in docs/mutation/<module>.md; list the ones without.
for (const name of names)
  spawnSync(process.execPath, [join(root, "scripts/mutation/survivors.mjs"), name], { cwd: root, stdio: "inherit" });

/** Killed and timed-out mutants over all valid ones (Stryker's mutation score). */
function score(report) {
  const counts = { killed: 0, timeout: 0, survived: 0, noCoverage: 0 };
  for (const file of Object.values(report.files))
    for (const mutant of file.mutants) {
      if (mutant.status === "Killed") counts.killed++;
      else if (mutant.status === "Timeout") counts.timeout++;
      else if (mutant.status === "Survived") counts.survived++;
      else if (mutant.status === "NoCoverage") counts.noCoverage++;
    }
  const valid = counts.killed + counts.timeout + counts.survived + counts.noCoverage;
  return { ...counts, score: valid ? (100 * (counts.killed + counts.timeout)) / valid : 100 };
}
