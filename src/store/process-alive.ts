import { readFileSync } from "node:fs";

/**
 * True when a process with this pid is running. EPERM: it exists but belongs to someone else. A zombie
 * (exited, not yet reaped: common in containers whose init does not reap) counts as gone.
 */
export function isProcessAlive(pid: number): boolean {
  if (pid === process.pid) return true;
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
