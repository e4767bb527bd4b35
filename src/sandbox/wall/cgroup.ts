import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { threadId } from "node:worker_threads";
import type { ResourceLimits } from "./limits.js";

/*
 * A cgroup per walled process, where the host can make one (docs/sandbox.md, "Resource limits"): a memory
 * limit (the kernel's OOM killer ends that worker alone) and a pids limit (a fork bomb stops at it, inside its
 * own worker). Each is a sibling of the host's own cgroup's children, named hookbox-<host pid>-t<thread id>-<copy>-<n>:
 * pools in worker threads of one process share the pid, not the thread id, and two separately built copies of
 * hookbox in one thread (an A/B bench of two trees) share both, not the random <copy> each module instance draws
 * (each copy counts <n> on its own). No CPU
 * controller: a worker in a CPU cgroup of its own leaves the host's autogroup and competes with the host's
 * whole session as an equal, which cost the host's event loop (loop_tool_calls_per_s 1579-1878 -> 467-491,
 * event_loop_delay_p99_ms_under_attack 2-8 -> 16-37 in the bench); CPU stays bounded by the watchdog and the
 * quarantine worker's nice 19, as before.
 *
 * cgroup v2 (one hierarchy) and v1 (one per controller, as on hosts that mount them separately) are
 * both handled; the process joins before bwrap runs (launcher.ts), so nothing of it ever runs outside.
 */

export type Controller = "memory" | "pids";
const CONTROLLERS: Controller[] = ["memory", "pids"];
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
/** This module instance's own part of the names: its counter `created` is its own. */
const copy = randomBytes(4).toString("hex");

/** This module instance's prefix: the host's pid first (removeStale reads it), then the thread and the copy. */
function ownName(): string {
  return `hookbox-${process.pid}-t${threadId}-${copy}`;
}

/** A cgroup path (as /proc/PID/cgroup shows it) that ends in a worker's cgroup made here. */
export function isWorkerCgroupPath(path: string): boolean {
  return /\/hookbox-\d+-t\d+-[0-9a-f]{8}-\d+$/.test(path);
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

/** cgroup v2: the host's cgroup must hand memory and pids to its children (`root`: where the hierarchy is mounted). */
export function unified(lines: string[], root = ROOT): Hierarchy[] | CgroupSupport {
  const path = lines.find((line) => line.startsWith("0::"))?.slice(3);
  if (path === undefined) return { ok: false, reason: "no cgroup v2 entry in /proc/self/cgroup" };
  const parent = join(root, path);
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

/** cgroup v1: one hierarchy per controller, each mounted at /sys/fs/cgroup/<controller> (`root` for /sys/fs/cgroup). */
export function perController(lines: string[], root = ROOT): Hierarchy[] | CgroupSupport {
  const hierarchies: Hierarchy[] = [];
  for (const controller of CONTROLLERS) {
    const line = lines.find((entry) => entry.split(":")[1]?.split(",").includes(controller));
    const mount = join(root, controller);
    if (line === undefined || !existsSync(join(mount, "cgroup.procs"))) {
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

/** The files a worker cgroup's limits are written to, and their values, per cgroup version and controller. */
export function settings(version: 1 | 2, controllers: Controller[], limits: ResourceLimits): [string, string][] {
  const out: [string, string][] = [];
  if (controllers.includes("memory")) {
    if (version === 2) out.push(["memory.max", String(limits.memoryBytes)], ["memory.swap.max", "0"]);
    else out.push(["memory.limit_in_bytes", String(limits.memoryBytes)]);
  }
  if (controllers.includes("pids")) out.push(["pids.max", String(limits.processes)]);
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
export function removeStale(parent: string): void {
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
