// CPU time of other processes, from Linux procfs: a process's threads' time on CPU in ns
// (/proc/PID/task/TID/schedstat, first field), and the processes below one (by /proc/PID/stat's ppid).
import { readdirSync, readFileSync } from "node:fs";

/** Each live thread of `pid` and its time on CPU in ns (none when the process is gone). */
function* threadTimes(pid) {
  let tids;
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return;
  }
  for (const tid of tids) {
    let ns;
    try {
      ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      continue; // the thread ended
    }
    yield { tid, ns };
  }
}

/** Milliseconds on CPU of every live thread of `pid` (0 when it is gone). */
export function cpuMs(pid) {
  let ns = 0;
  for (const thread of threadTimes(pid)) ns += thread.ns;
  return ns / 1e6;
}

/** Milliseconds on CPU of `pid`'s live threads by thread name (/proc/PID/task/TID/comm; threads of one name summed). */
export function cpuMsByThreadName(pid) {
  const byName = {};
  for (const { tid, ns } of threadTimes(pid)) {
    let name;
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
    } catch {
      continue; // the thread ended
    }
    byName[name] = (byName[name] ?? 0) + ns / 1e6;
  }
  return byName;
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
