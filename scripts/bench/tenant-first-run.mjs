// What a tenant's first run costs beyond a warm one, in process (no HTTP, no store, no background builds): the
// parts of serve_tenant_first_run_ms_10000_tenants that belong to the tenant itself. One pool, 20 tenants built
// first (workers booted, code paths warm), then for each of `--tenants N` (default 60) tenants, one after another
// (p50 over them, ms):
// - sandbox_load_ms: a fresh tenant's `sandbox.load` of the bench's script (its isolate, the load message);
// - build_ms: `createTenantRuntime` of another fresh tenant (its sandbox load, manifests, registry, model);
// - first_run_ms and second_run_ms: that runtime's first and second run (2 inferences, 1 sandboxed tool, 1 hook).
// `node scripts/bench/tenant-first-run.mjs [--tenants N]` (after `npm run build`) prints one JSON object.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { percentile, writeStartupTenantFiles } from "./fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const { createSandboxPool, createTenantRuntime } = await import(pathToFileURL(join(root, "dist/index.js")).href);
const at = process.argv.indexOf("--tenants");
const count = at === -1 ? 60 : Number(process.argv[at + 1]);

// The tenant of scripts/bench/serve-startup.mjs.
const dir = mkdtempSync(join(tmpdir(), "hookbox-bench-first-run-"));
writeStartupTenantFiles(dir);
const script = join(dir, "policy.ts");
const tenantConfig = (name) => ({ name, scripts: [{ path: script }], model: { kind: "scripted", file: join(dir, "model.json") } });

const pool = createSandboxPool({ workers: 2, prewarm: true });
for (let i = 0; i < 20; i++) await createTenantRuntime(tenantConfig(`warm-${i}`), pool);
const timed = async (work) => {
  const started = performance.now();
  await work();
  return performance.now() - started;
};
const samples = { sandbox_load_ms: [], build_ms: [], first_run_ms: [], second_run_ms: [] };
for (let i = 0; i < count; i++) {
  const sandbox = pool.tenant(`load-${i}`);
  samples.sandbox_load_ms.push(await timed(() => sandbox.load([{ path: script }])));
  let runtime;
  samples.build_ms.push(await timed(async () => (runtime = await createTenantRuntime(tenantConfig(`tenant-${i}`), pool))));
  for (const key of ["first_run_ms", "second_run_ms"]) {
    samples[key].push(
      await timed(async () => {
        const result = await runtime.start({ sessionId: `session-${i}-${key}`, prompt: "go" }).wait();
        if (result.status !== "completed") throw new Error(`the run did not complete: ${JSON.stringify(result)}`);
      }),
    );
  }
}
await pool.close();
process.stdout.write(
  `${JSON.stringify(Object.fromEntries(Object.entries(samples).map(([key, values]) => [key, Math.round(percentile(values, 50) * 100) / 100])))}\n`,
);
process.exit(0);
