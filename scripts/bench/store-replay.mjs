// The store's own CPU per run of the bench's workload, without the loop, the sandbox or HTTP: the store calls
// that SessionManager makes for run-floor.mjs's session level (the bench's tenant, 50 clients, each creating a
// session, running and reading its events back) are recorded once, with which calls came in the same turn of
// the event loop (what group commit puts in one transaction), then replayed against a fresh store of each
// given build, the calls of one recorded turn issued together and awaited before the next. The builds
// alternate over `--rounds`, each replay in a child process of its own; CPU from process.cpuUsage() over the
// replay of the timed runs (after the warm-up runs' calls).
// node scripts/bench/store-replay.mjs [--dist DIR]... [--store memory|sqlite|file] [--runs N] [--warm-up N] [--rounds N]
//   [--calls FILE]; one replay alone: node scripts/bench/store-replay.mjs --replay DIST memory|sqlite|file FILE
// (after npm run build; the recording is made with the first --dist, default this checkout's dist).
import { fork } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { writeTenant } from "./http-workload.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CLIENTS = 50;

/** The store methods a run's session calls (reads and writes); everything else passes through unrecorded. */
const RECORDED = new Set(["createSession", "getSession", "createRun", "sessionHistory", "write", "listEventTexts", "listEvents"]);

function openStoreOf(library, kind, dir) {
  if (kind === "memory") return library.openMemoryStore();
  return library.openStore(kind === "file" ? join(dir, "replay.db") : ":memory:");
}

/** Runs the workload over a recording store; returns the calls, each with the number of the turn it came in. */
async function record(dist, { runs, warmUp }) {
  const library = await import(pathToFileURL(join(dist, "index.js")).href);
  const dir = mkdtempSync(join(tmpdir(), "hookbox-store-replay-"));
  writeTenant(dir);
  const config = {
    name: "bench",
    scripts: [{ path: join(dir, "policy.ts") }],
    model: { kind: "scripted", file: join(dir, "model.json") },
    hostToolsModule: join(dir, "tools.mjs"),
  };
  const pool = library.createSandboxPool();
  const runtime = await library.createTenantRuntime(config, pool, {});
  const store = library.openStore(":memory:");
  const calls = [];
  let turn = 0;
  let turnEnding = false;
  let recordedRuns = 0;
  const recording = new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (typeof value !== "function" || !RECORDED.has(name)) return typeof value === "function" ? value.bind(target) : value;
      return (...args) => {
        if (!turnEnding) {
          turnEnding = true;
          setImmediate(() => {
            turn += 1;
            turnEnding = false;
          });
        }
        calls.push({ turn, name, args: structuredClone(args), warmUp: recordedRuns < warmUp });
        return value.apply(target, args);
      };
    },
  });
  const manager = new library.SessionManager({ store: recording, runtimeFor: async () => runtime });
  const oneRun = async () => {
    const session = await manager.create({ tenant: "bench", tenantConfig: config });
    const handle = await session.run("Refund A17", {});
    for await (const item of manager.eventTexts(handle.runId, 0)) if (item.type === "run-finished") break;
    recordedRuns += 1;
  };
  const perClient = Math.ceil((runs + warmUp) / CLIENTS);
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = 0; i < perClient; i++) await oneRun();
    }),
  );
  await store.close();
  await pool.close();
  rmSync(dir, { recursive: true, force: true });
  return { calls, runs: perClient * CLIENTS - Math.min(warmUp, perClient * CLIENTS) };
}

/** Replays the recorded calls against a fresh store of `dist`; the CPU of the timed calls (after the warm-up's). */
async function replay(dist, kind, recordingFile) {
  const library = await import(pathToFileURL(join(dist, "index.js")).href);
  const { calls, runs } = JSON.parse(readFileSync(recordingFile, "utf8"));
  const dir = mkdtempSync(join(tmpdir(), "hookbox-store-replay-"));
  const store = openStoreOf(library, kind, dir);
  let usage;
  try {
    let pending = [];
    for (let i = 0; i < calls.length;) {
      if (!usage && !calls[i].warmUp) {
        await Promise.all(pending);
        pending = [];
        usage = process.cpuUsage();
      }
      const turn = calls[i].turn;
      for (; i < calls.length && calls[i].turn === turn && (usage || calls[i].warmUp); i++)
        pending.push(store[calls[i].name](...calls[i].args));
      await new Promise(setImmediate);
    }
    await Promise.all(pending);
    const spent = process.cpuUsage(usage);
    return { cpuUsPerRun: (spent.user + spent.system) / runs };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--replay") {
  const [, , , dist, kind, file] = process.argv;
  const result = await replay(dist, kind, file);
  // Started by hand (under a profiler, say), it prints its result.
  if (process.send) process.send(result, () => process.exit(0));
  else process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const { values } = parseArgs({
    options: {
      dist: { type: "string", multiple: true },
      store: { type: "string" },
      runs: { type: "string" },
      "warm-up": { type: "string" },
      rounds: { type: "string" },
      calls: { type: "string" },
    },
  });
  const dists = (values.dist ?? [join(root, "dist")]).map((dist) => resolve(dist));
  const kind = values.store ?? "sqlite";
  if (!["memory", "sqlite", "file"].includes(kind)) throw new Error(`--store ${kind}: one of memory, sqlite, file`);
  const work = mkdtempSync(join(tmpdir(), "hookbox-store-replay-"));
  // `--calls FILE` keeps the recording there (made when FILE does not exist), for a replay under a profiler.
  const file = values.calls ?? join(work, "calls.json");
  if (!existsSync(file))
    writeFileSync(
      file,
      JSON.stringify(await record(dists[0], { runs: Number(values.runs ?? 1000), warmUp: Number(values["warm-up"] ?? 600) })),
    );
  const recorded = JSON.parse(readFileSync(file, "utf8"));
  const turns = new Set(recorded.calls.filter((call) => !call.warmUp).map((call) => call.turn)).size;
  process.stdout.write(
    `recorded ${recorded.calls.length} store calls, ${recorded.runs} timed runs, ${(turns / recorded.runs).toFixed(2)} turns a run\n`,
  );
  const readings = new Map(dists.map((dist) => [dist, []]));
  try {
    for (let r = 1; r <= Number(values.rounds ?? 3); r++) {
      for (const dist of r % 2 ? dists : [...dists].reverse()) {
        const child = fork(fileURLToPath(import.meta.url), ["--replay", dist, kind, file], {
          stdio: ["ignore", "inherit", "inherit", "ipc"],
        });
        const result = await new Promise((resolve, reject) => {
          child.once("message", resolve);
          child.once("exit", (code) => reject(new Error(`replay of ${dist} exited ${code}`)));
        });
        readings.get(dist).push(result.cpuUsPerRun);
        const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0];
        process.stdout.write(`round ${r} ${dist}: ${result.cpuUsPerRun.toFixed(1)} us of CPU a run (${kind}), load average ${load}\n`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const median = (list) => [...list].sort((a, b) => a - b)[list.length >> 1];
  process.stdout.write(`${JSON.stringify(Object.fromEntries([...readings].map(([dist, list]) => [dist, Math.round(median(list))])))}\n`);
}
