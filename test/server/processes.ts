import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Every descendant pid of `pid` (children, grandchildren...), from `ps`. */
export function descendants(pid: number): number[] {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s+/).map(Number));
  const out: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of rows) {
      if (ppid === parent) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

/** Alive = exists and is not a zombie (a zombie has exited; only its table entry waits to be reaped). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

export async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The program a process runs (its argv[0], from /proc/PID/cmdline); "" once it is gone. */
export function programOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0];
  } catch {
    return "";
  }
}

/** CPU ticks (user + system, 1/100 s) a process has used, from /proc/PID/stat; 0 once it is gone. */
export function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Waits until `pid` has burnt `ticks` more CPU ticks: it is running guest code, not waiting for it. */
export async function waitUntilBusy(pid: number, ticks = 5, timeoutMs = 20_000): Promise<void> {
  const start = cpuTicks(pid);
  await waitUntil(() => cpuTicks(pid) - start >= ticks, timeoutMs, `process ${pid} to spin`);
}
