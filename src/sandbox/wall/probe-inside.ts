/*
 * The wall probe (dist/wall-probe.js): started through the same launcher as the sandbox workers, with the
 * same flags, it stands in for an attacker who already runs code in a worker and reports what that code
 * can see and do. `hookbox doctor` and the wall's tests read its one JSON line on stdout.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { connect } from "node:net";
import type { ProbePlan, ProbeReport, Attempt, NativeResult, NativeRun, SelfReport } from "./probe-report.js";
import { closeInheritedFds } from "./inherited-fds.js";

const NAMESPACES = ["pid", "net", "ipc", "uts", "cgroup", "mnt", "user"] as const;

function attempt(target: string, action: () => unknown): Attempt {
  try {
    const value = action();
    return { target, ok: true, ...(typeof value === "string" ? { detail: value.slice(0, 200) } : {}) };
  } catch (error) {
    return { target, ok: false, error: describe(error) };
  }
}

function describe(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  const first = String(message ?? error).split("\n")[0];
  return code && !first.startsWith(code) ? `${code}: ${first}` : first;
}

function connectTo(port: number): Promise<Attempt> {
  const target = `127.0.0.1:${port}`;
  return new Promise((resolve) => {
    let socket;
    try {
      socket = connect({ host: "127.0.0.1", port });
    } catch (error) {
      resolve({ target, ok: false, error: describe(error) });
      return;
    }
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ target, ok: false, error: "timed out" });
    }, 2000);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ target, ok: true });
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      resolve({ target, ok: false, error: describe(error) });
    });
  });
}

function isolatedVm(): ProbeReport["isolatedVm"] {
  const require = createRequire(import.meta.url);
  try {
    const version = (require("isolated-vm/package.json") as { version: string }).version;
    const ivm = require("isolated-vm") as typeof import("isolated-vm");
    const isolate = new ivm.Isolate({ memoryLimit: 8 });
    const result = isolate.compileScriptSync("6 * 7").runSync(isolate.createContextSync()) as number;
    isolate.dispose();
    return { version, loads: result === 42 };
  } catch (error) {
    return { loads: false, error: describe(error) };
  }
}

/** The kernel's own account of this process: its seccomp mode and its hard resource limits. */
function self(): SelfReport | null {
  let status: string;
  let limits: string;
  try {
    status = readFileSync("/proc/self/status", "utf8");
    limits = readFileSync("/proc/self/limits", "utf8");
  } catch {
    return null;
  }
  const field = (name: string) => {
    const value = new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1];
    return value === undefined ? null : Number(value);
  };
  const hard: SelfReport["limits"] = {};
  // "Max processes             4096                 4096                 processes"
  for (const line of limits.split("\n").slice(1)) {
    const match = /^(.+?)\s{2,}(\S+)\s+(\S+)/.exec(line);
    if (match) hard[match[1]] = match[3] === "unlimited" ? "unlimited" : Number(match[3]);
  }
  return { seccomp: field("Seccomp"), seccompFilters: field("Seccomp_filters"), noNewPrivs: field("NoNewPrivs"), limits: hard };
}

function runNative(run: NativeRun): NativeResult {
  const child = spawnSync(run.path, run.args, { encoding: "utf8", timeout: run.timeoutMs ?? 10_000, killSignal: "SIGKILL" });
  return {
    target: [run.path, ...run.args].join(" "),
    status: child.status,
    signal: child.signal,
    stdout: (child.stdout ?? "").slice(0, 4000),
    stderr: (child.stderr ?? "").slice(0, 2000),
    ...(child.error ? { error: describe(child.error) } : {}),
  };
}

async function probe(plan: ProbePlan): Promise<ProbeReport> {
  const namespaces: Record<string, string | null> = {};
  for (const name of NAMESPACES) {
    try {
      namespaces[name] = readlinkSync(`/proc/self/ns/${name}`);
    } catch {
      namespaces[name] = null;
    }
  }
  return {
    uid: process.getuid?.() ?? -1,
    gid: process.getgid?.() ?? -1,
    env: Object.keys(process.env).sort(),
    namespaces,
    node: process.versions.node,
    v8: process.versions.v8,
    permissionModel: typeof process.permission?.has === "function",
    isolatedVm: isolatedVm(),
    self: self(),
    reads: (plan.reads ?? []).map((path) => attempt(path, () => readFileSync(path, "utf8"))),
    writes: (plan.writes ?? []).map((path) => attempt(path, () => writeFileSync(path, "written by the wall probe"))),
    ...(plan.port !== undefined ? { connect: await connectTo(plan.port) } : {}),
    ...(plan.spawn
      ? {
          spawn: attempt(process.execPath, () => {
            const child = spawnSync(process.execPath, ["-e", "process.stdout.write('spawned')"], { encoding: "utf8", timeout: 5000 });
            if (child.error) throw child.error;
            if (child.stdout !== "spawned") throw new Error(`the child did not run (status ${child.status}): ${child.stderr}`);
            return child.stdout;
          }),
        }
      : {}),
    ...(plan.natives ? { natives: plan.natives.map(runNative) } : {}),
  };
}

closeInheritedFds(); // as the worker does first (inherited-fds.ts)
const plan = JSON.parse(process.argv[2] ?? "{}") as ProbePlan;
const report = await probe(plan);
if (plan.pauseMs) await new Promise((resolve) => setTimeout(resolve, plan.pauseMs));
process.stdout.write(`${JSON.stringify(report)}\n`);
