import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";

/*
 * Who owns a `running` run. A pid alone does not survive PID reuse: a server that is PID 1 in a container and
 * restarts after `kill -9` is PID 1 again, and would take its dead predecessor's runs for its own. So a run
 * also records the owner's process instance: the machine's boot id and the process's start time (in clock
 * ticks since boot, /proc/PID/stat field 22). Another process on the same machine can check both, so a live
 * owner is still told apart from a new process that got its pid. Without procfs (macOS) the instance is a
 * random id: then only this process recognizes it, and other owners are judged by their pid alone.
 */

export interface ProcessOwner {
  pid: number;
  /** Absent on runs stored before instances were recorded. */
  instance?: string;
}

let self: string | undefined;

/** This process's instance id: `<boot id>:<start ticks>`, or `random:<uuid>` where procfs cannot tell. */
export function thisProcessInstance(): string {
  self ??= instanceOf(process.pid) ?? `random:${randomUUID()}`;
  return self;
}

/**
 * True when the process that owns a run still runs: the same pid, alive, and (where procfs can tell) the same
 * boot and start time. A run owned by this pid but another instance (or by no instance at all, which an older
 * hookbox wrote) belonged to a process that had this pid before: it is orphaned.
 */
export function isOwnerAlive(owner: ProcessOwner): boolean {
  if (owner.pid === process.pid) return owner.instance === thisProcessInstance();
  if (!isProcessAlive(owner.pid)) return false;
  if (owner.instance === undefined || owner.instance.startsWith("random:")) return true;
  const now = instanceOf(owner.pid);
  return now === undefined || now === owner.instance;
}

/** `<boot id>:<start ticks>` of a process, or undefined where procfs cannot tell (or the process is gone). */
function instanceOf(pid: number): string | undefined {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces and parentheses): state is field 3, starttime 22.
    const startTicks = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return boot && startTicks ? `${boot}:${startTicks}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when a process with this pid is running. EPERM: it exists but belongs to someone else. A zombie
 * (exited, not yet reaped: common in containers whose init does not reap) counts as gone.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true; // no procfs (macOS): trust kill(0)
  }
}
