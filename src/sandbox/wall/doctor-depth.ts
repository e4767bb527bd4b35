import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cgroupSupport, isWorkerCgroupPath } from "./cgroup.js";
import { DEFAULT_OPEN_FILES } from "./limits.js";
import type { NativeResult, SelfReport } from "./probe-report.js";
import { FILTER_MODE } from "./seccomp/filter.js";
import { filterArch } from "./seccomp/syscalls.js";
import { DEFAULT_MAX_TENANTS_PER_WORKER } from "../blast-radius.js";

/*
 * The doctor's checks of the wall in depth (docs/sandbox.md): the syscall filter, nested user namespaces,
 * rlimits and the cgroup, each measured on a real walled process (the probe, started as the workers are),
 * and the blast-radius policy of shared workers.
 */

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/** The kernel's word, from inside: Seccomp 2 is a filter in force. */
export function filterCheck(self: SelfReport | null): DoctorCheck {
  const arch = filterArch();
  if (arch === undefined) return { name: "syscall-filter", ok: false, detail: `none: the wall has no filter for ${process.arch}` };
  if (self?.seccomp !== 2)
    return { name: "syscall-filter", ok: false, detail: `not in force inside (Seccomp: ${self?.seccomp ?? "unreadable"})` };
  return { name: "syscall-filter", ok: true, detail: `in force inside (Seccomp 2, ${arch}): ${FILTER_MODE}` };
}

/** Holds when `unshare --user` failed inside (the probe ran it as native code). */
export function userNamespaceCheck(attempt: NativeResult | undefined): DoctorCheck {
  const name = "user-namespaces";
  if (attempt === undefined) return { name, ok: false, detail: "not measured: util-linux's unshare is not installed here" };
  if (attempt.status === 0) return { name, ok: false, detail: "unshare --user made a user namespace from inside" };
  const why = attempt.stderr.trim().split("\n").at(-1) || attempt.error || `exit ${attempt.status}`;
  return { name, ok: true, detail: `a nested user namespace is refused inside (unshare --user: ${why})` };
}

const LIMITS = { core: "Max core file size", fileSize: "Max file size", openFiles: "Max open files", processes: "Max processes" };

/** The hard rlimits the kernel reports for the walled process. */
export function limitsCheck(self: SelfReport | null): DoctorCheck {
  const limits = self?.limits ?? {};
  const [core, fileSize, openFiles, processes] = Object.values(LIMITS).map((field) => limits[field]);
  const ok = core === 0 && fileSize === 0 && openFiles === DEFAULT_OPEN_FILES && typeof processes === "number";
  const detail = `core ${core ?? "?"}, file size ${fileSize ?? "?"}, open files ${openFiles ?? "?"}, processes ${processes ?? "?"}`;
  return { name: "limits", ok, detail: ok ? `in force inside: ${detail}` : `not all in force inside (prlimit missing?): ${detail}` };
}

export interface CgroupMeasure {
  dirs: string[];
  memoryBytes?: number;
  processes?: number;
}

/** What the host sees of a walled process's cgroup (read while the probe is alive). */
export function measureCgroup(pid: number): CgroupMeasure | undefined {
  const support = cgroupSupport();
  if (!support.ok) return undefined;
  let lines: string[];
  try {
    lines = readFileSync(`/proc/${pid}/cgroup`, "utf8").trim().split("\n");
  } catch {
    return undefined;
  }
  const measure: CgroupMeasure = { dirs: [] };
  const read = (dir: string, file: string) => {
    try {
      return readFileSync(join(dir, file), "utf8").trim();
    } catch {
      return undefined;
    }
  };
  for (const hierarchy of support.hierarchies) {
    const controller = hierarchy.controllers[0];
    const line = lines.find((entry) =>
      support.version === 2 ? entry.startsWith("0::") : entry.split(":")[1]?.split(",").includes(controller),
    );
    const path = line?.split(":").slice(2).join(":");
    if (path === undefined || !isWorkerCgroupPath(path)) continue;
    const dir = join(hierarchy.parent, path.slice(path.lastIndexOf("/") + 1));
    measure.dirs.push(dir);
    const memory = read(dir, support.version === 2 ? "memory.max" : "memory.limit_in_bytes");
    if (hierarchy.controllers.includes("memory") && memory) measure.memoryBytes = Number(memory);
    const pids = read(dir, "pids.max");
    if (hierarchy.controllers.includes("pids") && pids) measure.processes = Number(pids);
  }
  return measure;
}

export function cgroupCheck(measure: CgroupMeasure | undefined): DoctorCheck {
  const support = cgroupSupport();
  if (!support.ok)
    return { name: "cgroup", ok: false, detail: `none: ${support.reason} (rlimits only: a bomb is bounded per uid, not per worker)` };
  if (measure === undefined || measure.dirs.length === 0)
    return { name: "cgroup", ok: false, detail: "the walled process was not in a cgroup of its own" };
  const memory = measure.memoryBytes === undefined ? "?" : `${Math.round(measure.memoryBytes / 1048576)} MB`;
  const ok = measure.memoryBytes !== undefined && measure.processes !== undefined;
  return {
    name: "cgroup",
    ok,
    detail: `cgroup v${support.version}, one per worker: memory ${memory}, processes ${measure.processes ?? "?"}`,
  };
}

export function cordonsCheck(): DoctorCheck {
  return {
    name: "cordons",
    ok: true,
    detail: `a shared worker holds at most ${DEFAULT_MAX_TENANTS_PER_WORKER} tenants by default (maxTenantsPerWorker), all of one cordon (set per tenant)`,
  };
}
