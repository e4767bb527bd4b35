// The floor of a run under http_cpu_ms_per_run: the bench's exact run (scripts/bench/http-workload.mjs: its
// tenant's files, scripted model, host tools and sandboxed policy; 3 inferences, 2 tools, 4 sandboxed hooks),
// driven through the library (dist/index.js) with no HTTP, by the same number of concurrent clients, each
// doing its runs one after another. Each level adds one layer of what serve does per run, so the differences
// say what each layer costs this process:
//   loop          createTenantRuntime, start().wait(): the loop with the tenant's host tools, no hooks, no store
//   host-hooks    the same with the policy's two hooks as in-process host hooks (the hook chain, validation)
//   sandboxed     the policy in the sandbox, as serve runs it: + the sandbox's per-run open/close and 4 hook hops
//   session-js    SessionManager over openMemoryStore(), each client creating a session, starting the run and
//                 reading its events as JSON text to run-finished (what the SSE route reads): + the store contract
//   session-sqlite  the same over openStore(":memory:"): what `hookbox serve --store :memory:` runs, minus HTTP
//   session-loop  not in the default levels: session-js without the policy (the `loop` level's run): the session
//                 layer and its events' way to a reader with no sandbox workers, whose CPU moves the other levels
// Each level runs in a child process of its own (a clean heap and JIT), measured from process.cpuUsage() (all of
// its threads, V8's JIT and GC threads included, as serve's own CPU is counted) over the timed part only; the
// sandbox workers' CPU is reported apart. Levels alternate over `--rounds`; the medians are printed.
// The warm-up is the serve bench's (http-workload.mjs: 10 runs, then WARM_UP_RUNS more from the clients): a floor
// is the steady state, with V8 done compiling. `--warm-up N` sets the total.
// `--dist DIR`: another build's dist (A/B: alternate runs of two builds, e.g. a copy of main's dist made right after
// its build), default this checkout's.
// node scripts/bench/run-floor.mjs [--clients N] [--runs-per-client N] [--warm-up N] [--rounds N] [--levels a,b] [--dist DIR]
// (after npm run build). Prints one line per level and round, then one JSON object of medians.
import { fork } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { round, WARM_UP_RUNS, writeTenant } from "./http-workload.mjs";
import { treeCpuMs } from "./proc-cpu.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const LEVELS = ["loop", "host-hooks", "sandboxed", "session-js", "session-sqlite"];
const EXTRA_LEVELS = ["session-loop"];
const PROMPT = "Refund A17";

/** The policy.ts of writeTenant as trusted host hooks: the same decisions, made in this process. */
const HOST_POLICY = {
  name: "policy",
  beforeToolCall(p) {
    if (p.call.name === "refund" && p.call.args.amount > 100) return { action: "deny", reason: "over limit" };
  },
  afterToolCall(p) {
    return { result: p.result };
  },
};

async function measureLevel(level, { clients, runsPerClient, warmUp, dist }) {
  const library = await import(pathToFileURL(join(dist, "index.js")).href);
  const dir = mkdtempSync(join(tmpdir(), "hookbox-run-floor-"));
  writeTenant(dir);
  const sandboxed = level !== "loop" && level !== "host-hooks" && level !== "session-loop";
  const config = {
    name: "bench",
    scripts: sandboxed ? [{ path: join(dir, "policy.ts") }] : [],
    model: { kind: "scripted", file: join(dir, "model.json") },
    hostToolsModule: join(dir, "tools.mjs"),
  };
  const pool = library.createSandboxPool();
  const runtime = await library.createTenantRuntime(config, pool, level === "host-hooks" ? { host: { hooks: [HOST_POLICY] } } : {});
  const store =
    level === "session-js" || level === "session-loop"
      ? library.openMemoryStore()
      : level === "session-sqlite"
        ? library.openStore(":memory:")
        : undefined;
  const manager = store && new library.SessionManager({ store, runtimeFor: async () => runtime });
  let sessions = 0;
  const oneRun = store
    ? async () => {
        const session = await manager.create({ tenant: "bench", tenantConfig: config });
        const handle = await session.run(PROMPT, {});
        let text = "";
        for await (const item of manager.eventTexts(handle.runId, 0)) text += item.json;
        if (!text.includes('"run-finished"') || !text.includes('"completed"')) throw new Error(`run did not complete: ${text.slice(-300)}`);
      }
    : async () => {
        const result = await runtime.start({ sessionId: `sess_${++sessions}`, prompt: PROMPT }).wait();
        if (result.status !== "completed") throw new Error(`run ${result.status}: ${result.reason}`);
      };
  const clientsDoing = (perClient) =>
    Promise.all(
      Array.from({ length: clients }, async () => {
        for (let i = 0; i < perClient; i++) await oneRun();
      }),
    );
  try {
    // The serve bench's warm-up shape: min(clients, 10) runs at once, then rounds of all clients.
    const first = Math.min(clients, 10, warmUp);
    await Promise.all(Array.from({ length: first }, oneRun));
    if (warmUp > first) await clientsDoing(Math.ceil((warmUp - first) / clients));
    const usage = process.cpuUsage();
    const workersBefore = treeCpuMs(process.pid).below;
    const begin = performance.now();
    await clientsDoing(runsPerClient);
    const seconds = (performance.now() - begin) / 1000;
    const spent = process.cpuUsage(usage);
    const runs = clients * runsPerClient;
    return {
      level,
      cpuMsPerRun: (spent.user + spent.system) / 1000 / runs,
      workerCpuMsPerRun: (treeCpuMs(process.pid).below - workersBefore) / runs,
      runsPerS: runs / seconds,
    };
  } finally {
    await store?.close();
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--level") {
  const [, , , level, clients, runsPerClient, warmUp, dist = join(root, "dist")] = process.argv;
  const result = await measureLevel(level, {
    clients: Number(clients),
    runsPerClient: Number(runsPerClient),
    warmUp: Number(warmUp),
    dist,
  });
  // Started by hand (under perf, say), it prints its result.
  if (process.send) process.send(result, () => process.exit(0));
  else process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const { values } = parseArgs({
    options: {
      clients: { type: "string" },
      "runs-per-client": { type: "string" },
      "warm-up": { type: "string" },
      rounds: { type: "string" },
      levels: { type: "string" },
      dist: { type: "string" },
    },
  });
  const levels = values.levels ? values.levels.split(",") : LEVELS;
  for (const level of levels)
    if (!LEVELS.includes(level) && !EXTRA_LEVELS.includes(level))
      throw new Error(`unknown level ${level}: one of ${[...LEVELS, ...EXTRA_LEVELS].join(", ")}`);
  const args = [
    values.clients ?? "50",
    values["runs-per-client"] ?? "6",
    values["warm-up"] ?? String(10 + WARM_UP_RUNS),
    resolve(values.dist ?? join(root, "dist")),
  ];
  const readings = new Map(levels.map((level) => [level, []]));
  for (let r = 1; r <= Number(values.rounds ?? 3); r++) {
    // Alternate the order, so no level always runs at the same point of a shared machine's load.
    for (const level of r % 2 ? levels : [...levels].reverse()) {
      const child = fork(fileURLToPath(import.meta.url), ["--level", level, ...args], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
      const result = await new Promise((resolve, reject) => {
        child.once("message", resolve);
        child.once("exit", (code) => reject(new Error(`level ${level} exited ${code}`)));
      });
      readings.get(level).push(result);
      process.stdout.write(
        `round ${r} ${level.padEnd(15)} ${result.cpuMsPerRun.toFixed(3)} ms/run (workers ${result.workerCpuMsPerRun.toFixed(3)}, ${result.runsPerS.toFixed(1)} runs/s), load average ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}\n`,
      );
    }
  }
  const median = (list) => [...list].sort((a, b) => a - b)[list.length >> 1];
  const summary = {};
  for (const [level, list] of readings) {
    summary[`${level}_cpu_ms_per_run`] = round(median(list.map((r) => r.cpuMsPerRun)), 3);
    summary[`${level}_worker_cpu_ms_per_run`] = round(median(list.map((r) => r.workerCpuMsPerRun)), 3);
  }
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}
