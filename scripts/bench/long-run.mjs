// iteration_ms_ratio_1000: one run of 1000 iterations through the real loop (dist/index.js), in process, its
// session in a SQLite store file; each iteration is one inference of the scripted model asking for one host
// tool call. An iteration's time is the process's CPU time (user + system) between two inference-started
// events as its reader gets them (committed): on a machine shared with other work, wall time measures the
// others too. The ratio compares iterations 981-1000 with iterations 1-20, after a warm-up run of 100
// iterations; the wall-time ratio is reported beside.
// Alone: node scripts/bench/long-run.mjs [--iterations N] (after npm run build).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath, pathToFileURL } from "node:url";

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

export async function measureLongRun({ dist, dir, iterations = 1000, window = 20 }) {
  const { createTenantRuntime, SessionManager, openStore } = await import(pathToFileURL(join(dist, "index.js")).href);
  const steps = Array.from({ length: iterations - 1 }, (_, i) => ({ toolCalls: [{ id: `c${i}`, name: "lookup", args: { id: "A17" } }] }));
  steps.push({ text: "done" });
  writeFileSync(join(dir, "model.json"), JSON.stringify({ steps }));
  const lookup = {
    name: "lookup",
    description: "look up an order",
    parameters: { type: "object", properties: { id: { type: "string" } } },
    handler: (args) => ({ id: args.id, total: 120 }),
  };
  // Host tools only: no script runs, so no sandbox is needed.
  const noPool = {
    tenant() {
      throw new Error("no sandbox in this bench");
    },
    async close() {},
  };
  const config = { name: "bench", scripts: [], model: { kind: "scripted", file: join(dir, "model.json") } };
  const runtime = await createTenantRuntime(config, noPool, { host: { tools: [lookup] } });
  const store = openStore(join(dir, "run.db"));
  const manager = new SessionManager({ store, runtimeFor: async () => runtime });
  try {
    // A warm-up run first (its own session, the first 100 steps), so iteration 10 is not measured cold.
    const warm = await manager.create({ tenant: "bench", tenantConfig: config });
    const warmRun = await warm.run("warm up", { maxIterations: 100 });
    for await (const _event of warmRun.events());
    await warmRun.wait();
    const session = await manager.create({ tenant: "bench", tenantConfig: config });
    const handle = await session.run("go", { maxIterations: iterations });
    const starts = [];
    const cpu = [];
    for await (const event of handle.events()) {
      if (event.type !== "inference-started") continue;
      starts.push(performance.now());
      const { user, system } = process.cpuUsage();
      cpu.push((user + system) / 1000);
    }
    const result = await handle.wait();
    if (result.status !== "completed") throw new Error(`long run ${result.status}: ${result.reason}`);
    const per = (series) => series.slice(1).map((t, i) => t - series[i]);
    const cpuTimes = per(cpu);
    const wallTimes = per(starts);
    const first = mean(cpuTimes.slice(0, window));
    const last = mean(cpuTimes.slice(-window));
    return {
      msAt10: first,
      msAt1000: last,
      ratio: last / first,
      wallRatio: mean(wallTimes.slice(-window)) / mean(wallTimes.slice(0, window)),
      totalS: (starts.at(-1) - starts[0]) / 1000,
    };
  } finally {
    await manager.close();
    await store.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { iterations: { type: "string" } } });
  const dir = mkdtempSync(join(tmpdir(), "hookbox-long-run-"));
  try {
    const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "dist");
    process.stdout.write(`${JSON.stringify(await measureLongRun({ dist, dir, iterations: Number(values.iterations ?? 1000) }))}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
