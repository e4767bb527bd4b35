import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { threadId } from "node:worker_threads";
import type { ResourceLimits } from "./limits.js";

/*
 * A cgroup per walled process, where the host can make one (docs/sandbox.md, "Resource limits"): a memory
 * limit (the kernel's OOM killer ends that worker alone), a pids limit (a fork bomb stops at it, inside its
 * own worker), and a CPU weight (a worker's processes together get one worker's share of a busy machine,
 * however many they are; the quarantine worker a small one). Each is a sibling of the host's own cgroup's
 * children, named hookbox-<host pid>-t<thread id>-<n> (pools in worker threads of one process share the pid, not
 * the thread id), so a worker competes for the CPU as one process did before.
 *
 * cgroup v2 (one hierarchy) and v1 (one per controller, as on hosts that mount the three separately) are
 * both handled; the process joins before bwrap runs (launcher.ts), so nothing of it ever runs outside.
 */

type Controller = "memory" | "pids" | "cpu";
const CONTROLLERS: Controller[] = ["memory", "pids", "cpu"];
const ROOT = "/sys/fs/cgroup";

interface Hierarchy {
  /** Where a worker's cgroup is made (the host's own cgroup in that hierarchy). */
  parent: string;
  controllers: Controller[];
}

export type CgroupSupport = { ok: true; version: 1 | 2; hierarchies: Hierarchy[] } | { ok: false; reason: string };

/** A worker's cgroup: the files its process joins by writing its pid, and the removal once it is gone. */
export interface WorkerCgroup {
  procsFiles: string[];
  /** The cgroup's directories (one per hierarchy). */
  dirs: string[];
  remove(): void;
}

let support: CgroupSupport | undefined;
let created = 0;

/** This thread's prefix: the host's pid first (removeStale reads it), then the thread, whose counter is its own. */
function ownName(): string {
  return `hookbox-${process.pid}-t${threadId}`;
}

/** A cgroup path (as /proc/PID/cgroup shows it) that ends in a worker's cgroup made here. */
export function isWorkerCgroupPath(path: string): boolean {
  return /\/hookbox-\d+-t\d+-\d+$/.test(path);
}

/** Whether this host can make worker cgroups, checked once per process (once per thread: each has its module). */
export function cgroupSupport(): CgroupSupport {
  support ??= detect();
  return support;
}

function detect(): CgroupSupport {
  if (process.platform !== "linux") return { ok: false, reason: "cgroups need Linux" };
  let lines: string[];
  try {
    lines = readFileSync("/proc/self/cgroup", "utf8").trim().split("\n");
  } catch (error) {
    return { ok: false, reason: `cannot read /proc/self/cgroup: ${(error as Error).message}` };
  }
  const hierarchies = existsSync(join(ROOT, "cgroup.controllers")) ? unified(lines) : perController(lines);
  if (!Array.isArray(hierarchies)) return hierarchies;
  for (const hierarchy of hierarchies) {
    removeStale(hierarchy.parent);
    const probe = join(hierarchy.parent, `${ownName()}-probe`);
    try {
      mkdirSync(probe);
      rmdirSync(probe);
    } catch (error) {
      return { ok: false, reason: `cannot create a cgroup under ${hierarchy.parent}: ${(error as NodeJS.ErrnoException).code}` };
    }
  }
  return { ok: true, version: existsSync(join(ROOT, "cgroup.controllers")) ? 2 : 1, hierarchies };
}

/** cgroup v2: the host's cgroup must hand memory and pids (and cpu, where it can) to its children. */
function unified(lines: string[]): Hierarchy[] | CgroupSupport {
  const path = lines.find((line) => line.startsWith("0::"))?.slice(3);
  if (path === undefined) return { ok: false, reason: "no cgroup v2 entry in /proc/self/cgroup" };
  const parent = join(ROOT, path);
  const control = join(parent, "cgroup.subtree_control");
  const enabled = () => safely(() => readFileSync(control, "utf8").trim().split(/\s+/)) ?? [];
  // Enabling works where the host's cgroup holds no process of its own (the root of a container's cgroup
  // namespace, or a delegated cgroup the host was started below).
  for (const name of CONTROLLERS) if (!enabled().includes(name)) safely(() => writeFileSync(control, `+${name}`));
  const on = enabled();
  if (!on.includes("memory") || !on.includes("pids"))
    return {
      ok: false,
      reason: `cgroup v2 ${parent} does not delegate memory and pids to its children; run the host in a delegated cgroup`,
    };
  return [{ parent, controllers: CONTROLLERS.filter((name) => on.includes(name)) }];
}

/** cgroup v1: one hierarchy per controller, each mounted at /sys/fs/cgroup/<controller>. */
function perController(lines: string[]): Hierarchy[] | CgroupSupport {
  const hierarchies: Hierarchy[] = [];
  for (const controller of CONTROLLERS) {
    const line = lines.find((entry) => entry.split(":")[1]?.split(",").includes(controller));
    const mount = join(ROOT, controller);
    if (line === undefined || !existsSync(join(mount, "cgroup.procs"))) {
      if (controller === "cpu") continue;
      return { ok: false, reason: `no ${controller} cgroup hierarchy at ${mount}` };
    }
    hierarchies.push({ parent: join(mount, line.split(":").slice(2).join(":")), controllers: [controller] });
  }
  return hierarchies;
}

/** Makes the cgroup of one walled process, with `limits` written; undefined where the host cannot. */
export function workerCgroup(limits: ResourceLimits): WorkerCgroup | undefined {
  const found = cgroupSupport();
  if (!found.ok) return undefined;
  const name = `${ownName()}-${++created}`;
  const dirs: string[] = [];
  try {
    for (const hierarchy of found.hierarchies) {
      const dir = join(hierarchy.parent, name);
      mkdirSync(dir);
      dirs.push(dir);
      for (const [file, value] of settings(found.version, hierarchy.controllers, limits)) writeFileSync(join(dir, file), value);
    }
  } catch (error) {
    for (const dir of dirs) safely(() => rmdirSync(dir));
    throw new Error(`cannot set up the worker's cgroup: ${(error as Error).message}`);
  }
  return { procsFiles: dirs.map((dir) => join(dir, "cgroup.procs")), dirs, remove: () => removeWhenEmpty(dirs) };
}

function settings(version: 1 | 2, controllers: Controller[], limits: ResourceLimits): [string, string][] {
  const out: [string, string][] = [];
  const low = limits.cpu === "low";
  if (controllers.includes("memory")) {
    if (version === 2) out.push(["memory.max", String(limits.memoryBytes)], ["memory.swap.max", "0"]);
    else out.push(["memory.limit_in_bytes", String(limits.memoryBytes)]);
  }
  if (controllers.includes("pids")) out.push(["pids.max", String(limits.processes)]);
  // A worker may use as much of a busy machine as one process per core would (its start-up and GC are
  // multi-threaded, and one process's share made tenant loads time out on a loaded host). The quarantine
  // worker gets a quarter of that: it loses to the others when the machine is busy, but still starts and
  // answers on a machine loaded by other users (a nice-19-like 1.5% share starved it to death there).
  const weight = (normal: number) => Math.max(1, Math.round((low ? normal / 4 : normal) * availableParallelism()));
  if (controllers.includes("cpu"))
    out.push(version === 2 ? ["cpu.weight", String(Math.min(10_000, weight(100)))] : ["cpu.shares", String(weight(1024))]);
  return out;
}

/** rmdir once the processes are gone (the kernel refuses while any is still exiting). */
function removeWhenEmpty(dirs: string[], attempts = 50): void {
  const left = dirs.filter((dir) => {
    try {
      rmdirSync(dir);
      return false;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EBUSY";
    }
  });
  if (left.length && attempts > 0) setTimeout(() => removeWhenEmpty(left, attempts - 1), 100).unref();
}

/** Cgroups a host that is gone left behind (it was killed before it could remove them). */
function removeStale(parent: string): void {
  for (const entry of safely(() => readdirSync(parent)) ?? []) {
    const owner = /^hookbox-(\d+)-/.exec(entry)?.[1];
    if (owner === undefined || Number(owner) === process.pid || isAlive(Number(owner))) continue;
    safely(() => rmdirSync(join(parent, entry)));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The value, or undefined when `action` throws (a best-effort cleanup step). */
function safely<T>(action: () => T): T | undefined {
  try {
    return action();
  } catch {
    return undefined;
  }
}
