// The 100 KB echo through afterToolCall with four hooks (BENCHMARKS.md, "Where the time goes now"): one that
// returns the result untouched, one that returns nothing, one that reads it then returns it, one that returns a
// copy. p50 of 200 calls after 30 warm-up, in ms. Run after `npm run build`: node scripts/bench/echo-variants.mjs
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { echoPayload, percentile, round, script, timeCalls } from "./fixtures.mjs";

const dist = join(resolve(import.meta.dirname, "../.."), "dist");
const { createSandboxPool } = await import(pathToFileURL(join(dist, "index.js")).href);

const variants = {
  untouched: "return { result: p.result };",
  nothing: "return undefined;",
  read_then_return: "if (p.result.items.length < 0) throw new Error('never'); return { result: p.result };",
  copy: "return { result: { ...p.result } };",
};
const pool = createSandboxPool({ workers: 1, prewarm: true });
const figures = {};
for (const [name, body] of Object.entries(variants)) {
  const tenant = pool.tenant(`echo-${name}`);
  const source = script(
    name,
    `import { defineScript } from "hookbox";\nexport default defineScript({ name: "echo", hooks: { afterToolCall(p) { ${body} } } });`,
  );
  const run = await tenant.openRun({ runId: name, scripts: await tenant.load([source]) });
  await timeCalls(30, () => run.callHook("echo", "afterToolCall", echoPayload));
  figures[`echo_100kb_ms_p50_${name}`] = round(
    percentile(await timeCalls(200, () => run.callHook("echo", "afterToolCall", echoPayload)), 50),
    3,
  );
  await run.close();
}
console.log(JSON.stringify(figures));
await pool.close();
