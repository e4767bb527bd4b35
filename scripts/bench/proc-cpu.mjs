// CPU time of other processes, from Linux procfs: a process's threads' time on CPU in ns
// (/proc/PID/task/TID/schedstat, first field), and the processes below one (by /proc/PID/stat's ppid).
import { readdirSync, readFileSync } from "node:fs";

/** Milliseconds on CPU of every live thread of `pid` (0 when it is gone). */
export function cpuMs(pid) {
  let ns = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        /* the thread ended */
      }
    }
  } catch {
    return 0;
  }
  return ns / 1e6;
}

/** Every live process below `pid` (children, grandchildren, ...). */
export function descendants(pid) {
  const children = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch {
      /* it ended */
    }
  }
  const out = [];
  const stack = [...(children.get(pid) ?? [])];
  while (stack.length) {
    const next = stack.pop();
    out.push(next);
    stack.push(...(children.get(next) ?? []));
  }
  return out;
}

/** CPU ms of a process and, separately, of everything below it (sandbox workers, their walls). */
export function treeCpuMs(pid) {
  const below = descendants(pid).reduce((sum, child) => sum + cpuMs(child), 0);
  return { own: cpuMs(pid), below };
}
