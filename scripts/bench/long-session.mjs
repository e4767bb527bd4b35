// session_cpu_ratio_1000 and session_store_growth_ratio_1000: one session of 1010 runs through a real
// `hookbox serve` with the SQLite file store, each run 2 inferences and 1 host tool with a sandboxed before and
// after hook, read over SSE to its end, one after another. Serve's CPU per run (its threads' time on CPU, procfs)
// and the bytes the store counts for the tenant (tenant_usage) are taken after every run; the ratios compare
// runs 991-1010 ("run 1000") with runs 1-20 ("run 10"), after a warm-up session of 20 runs.
// Alone: node scripts/bench/long-session.mjs [--runs N] (after npm run build).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { cpuMs } from "./proc-cpu.mjs";
import { newSession, oneRun, startServe, writeTenant } from "./http-workload.mjs";

const STEPS = [{ toolCalls: [{ id: "c1", name: "lookup", args: { id: "A17" } }] }, { text: "Order A17 totals 120." }];
const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

export async function measureLongSession({ dir, runs = 1010, window = 20, onProgress } = {}) {
  // A quota no session reaches: a store that grows with the square of the session (before schema 7) would stop at 1 GiB.
  writeTenant(dir, { steps: STEPS, limits: { maxStoreBytes: 2 ** 40 } });
  const file = join(dir, "session.db");
  const server = await startServe(dir, file);
  try {
    const warm = await newSession(server.url);
    for (let i = 0; i < 20; i++) await oneRun(server.url, warm);
    const db = new DatabaseSync(file, { readOnly: true });
    const stored = () => db.prepare("SELECT bytes FROM tenant_usage WHERE tenant = 'bench'").get()?.bytes ?? 0;
    const session = await newSession(server.url);
    const cpu = [];
    const bytes = [];
    let lastCpu = cpuMs(server.pid);
    let lastBytes = stored();
    for (let i = 1; i <= runs; i++) {
      await oneRun(server.url, session);
      const nowCpu = cpuMs(server.pid);
      const nowBytes = stored();
      cpu.push(nowCpu - lastCpu);
      bytes.push(nowBytes - lastBytes);
      lastCpu = nowCpu;
      lastBytes = nowBytes;
      if (i % 100 === 0) onProgress?.(i, mean(cpu.slice(-window)), mean(bytes.slice(-window)));
    }
    db.close();
    const at = (series, run) => mean(series.slice(Math.max(0, run - window / 2), run + window / 2));
    const last = Math.min(1000, runs - window / 2);
    return {
      cpuMsAt10: at(cpu, 10),
      cpuMsAt1000: at(cpu, last),
      cpuRatio: at(cpu, last) / at(cpu, 10),
      bytesAt10: at(bytes, 10),
      bytesAt1000: at(bytes, last),
      growthRatio: at(bytes, last) / at(bytes, 10),
      storedBytes: lastBytes,
    };
  } finally {
    await server.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { runs: { type: "string" } } });
  const dir = mkdtempSync(join(tmpdir(), "hookbox-long-session-"));
  try {
    const result = await measureLongSession({
      dir,
      runs: Number(values.runs ?? 1010),
      onProgress: (run, cpu, bytes) => process.stderr.write(`run ${run}: ${cpu.toFixed(2)} ms CPU, ${Math.round(bytes)} bytes per run\n`),
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
