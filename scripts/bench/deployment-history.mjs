// What a run's start pays to find its tenant's current deployment, by how many deployments the tenant has
// made (each deploy and rollback adds one): `currentDeployment` (what src/policy/deployments.ts reads) beside
// `listDeployments(...).at(-1)` (the whole history, read and parsed), on a SQLite file store.
// node scripts/bench/deployment-history.mjs [--deployments N,N,...] [--reads N]   (after npm run build)
// Each figure is the median of five alternated readings of the mean over --reads calls.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { openStore } = await import(pathToFileURL(join(root, "dist/index.js")).href);
const { values } = parseArgs({ options: { deployments: { type: "string" }, reads: { type: "string" } } });
const counts = (values.deployments ?? "1,100,1000,10000").split(",").map(Number);
const reads = Number(values.reads ?? 200);

/** Mean ms of one call of `read`, over `reads` calls after as many to warm up. */
async function timed(read) {
  for (let i = 0; i < reads; i++) await read();
  const started = performance.now();
  for (let i = 0; i < reads; i++) await read();
  return (performance.now() - started) / reads;
}
const median = (list) => list.sort((a, b) => a - b)[Math.floor(list.length / 2)];

const work = mkdtempSync(join(tmpdir(), "hookbox-deployment-history-"));
try {
  for (const [index, count] of counts.entries()) {
    const store = openStore(join(work, `d${index}.db`));
    for (let i = 1; i <= count; i++)
      await store.createDeployment({
        id: `dep_${i}`,
        tenant: "acme",
        scripts: [{ name: "policy", version: i }],
        shadow: [],
        fromConfig: false,
        createdMs: i,
      });
    // Alternated five times, the median of each: a loaded machine moves single readings.
    const current = [];
    const whole = [];
    for (let repeat = 0; repeat < 5; repeat++) {
      current.push(await timed(() => store.currentDeployment("acme")));
      whole.push(await timed(async () => (await store.listDeployments("acme")).at(-1)));
    }
    process.stdout.write(
      `${String(count).padStart(6)} deployments: currentDeployment ${median(current).toFixed(4)} ms, listDeployments().at(-1) ${median(whole).toFixed(4)} ms\n`,
    );
    await store.close();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
