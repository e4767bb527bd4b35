// Hook round-trip latency of one or two built trees, in one process (after `npm run build` in each tree).
//   node scripts/bench/hook-latency.mjs                       this tree: p50/p90/p99 of 5000 sequential calls
//   node scripts/bench/hook-latency.mjs --a DIR --b DIR       A/B: alternating blocks of calls, one 1-worker pool
//                                                             per tree; the median of the per-block p50s of each
// Options: --calls N (per block, default 800), --blocks N (per tree, default 10). HOOKBOX_REPLY_SPIN_US=0 in the
// environment turns the host's reply polling off (the tail profile of BENCHMARKS.md).
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { HOOK_BODY, percentile, round, script, smallPayload, timeCalls } from "./fixtures.mjs";

const { values } = parseArgs({
  options: { a: { type: "string" }, b: { type: "string" }, calls: { type: "string" }, blocks: { type: "string" } },
});
const here = resolve(import.meta.dirname, "../..");
const calls = Number(values.calls ?? 800);
const blocks = Number(values.blocks ?? 10);
const policy = script(
  "policy",
  `import { defineScript } from "hookbox";\nexport default defineScript({ hooks: { beforeToolCall(p) { ${HOOK_BODY} } } });`,
);

async function openTree(tree) {
  const dist = join(resolve(tree), "dist");
  const { createSandboxPool } = await import(pathToFileURL(join(dist, "index.js")).href);
  const pool = createSandboxPool({ workers: 1, prewarm: true, workerPath: join(dist, "sandbox-worker.js") });
  const tenant = pool.tenant("bench");
  const run = await tenant.openRun({ runId: "bench", scripts: await tenant.load([policy]) });
  const call = () => run.callHook("policy", "beforeToolCall", smallPayload);
  await timeCalls(1000, call);
  return { pool, call };
}

if (!values.a) {
  const { pool, call } = await openTree(here);
  const samples = await timeCalls(5000, call);
  const us = (p) => round(percentile(samples, p) * 1000, 1);
  console.log(JSON.stringify({ hook_us_p50: us(50), hook_us_p90: us(90), hook_us_p99: us(99) }));
  await pool.close();
} else {
  const trees = { a: await openTree(values.a), b: await openTree(values.b ?? here) };
  const p50s = { a: [], b: [] };
  for (let i = 0; i < blocks; i++) {
    for (const side of i % 2 ? ["b", "a"] : ["a", "b"]) p50s[side].push(percentile(await timeCalls(calls, trees[side].call), 50) * 1000);
  }
  const median = (list) => round(percentile(list, 50), 1);
  console.log(
    JSON.stringify({
      a_hook_us_p50: median(p50s.a),
      b_hook_us_p50: median(p50s.b),
      b_faster_blocks: p50s.b.filter((v, i) => v < p50s.a[i]).length,
      blocks,
    }),
  );
  await Promise.all([trees.a.pool.close(), trees.b.pool.close()]);
}
