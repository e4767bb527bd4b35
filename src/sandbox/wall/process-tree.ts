import { readdirSync, readFileSync } from "node:fs";

/*
 * bwrap starts a process (the sandbox's init) that starts the command: the Node process the host means
 * when it speaks of a walled worker is the innermost of that chain.
 */

/** The innermost process under `pid`, following only children (the process itself when it has none). */
export function innermostPid(pid: number): number {
  let current = pid;
  for (let depth = 0; depth < 8; depth++) {
    const [child] = childrenOf(current);
    if (child === undefined) return current;
    current = child;
  }
  return current;
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return scanForChildren(pid);
  }
}

/** Children started by any thread of `pid` (a child forked by a helper thread is listed under that thread only). */
function childrenOfAnyThread(pid: number): number[] {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  if (threads.length === 1) return childrenOf(pid);
  const children: number[] = [];
  for (const thread of threads) {
    try {
      for (const child of readFileSync(`/proc/${pid}/task/${thread}/children`, "utf8").trim().split(/\s+/))
        if (child !== "") children.push(Number(child));
    } catch {
      return scanForChildren(pid);
    }
  }
  return children;
}

/**
 * `pid` and every process under it, parents first, at most `limit` of them (the caller judges a tree that
 * reaches the limit: it may hold more).
 */
export function processTree(pid: number, limit: number): number[] {
  const tree = [pid];
  for (let index = 0; index < tree.length && tree.length < limit; index++) {
    for (const child of childrenOfAnyThread(tree[index])) {
      if (tree.length >= limit) break;
      tree.push(child);
    }
  }
  return tree;
}

/** Without /proc/PID/task/PID/children (CONFIG_PROC_CHILDREN), the parent field of every process's stat. */
export function scanForChildren(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The fourth field follows the command name, which may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/**
 * SIGKILLs `pid` and every process under it. bwrap's sandbox processes tie themselves to their parent only
 * once set up: one killed with bwrap in the first milliseconds would wait forever for a parent that is gone.
 * Stopping `pid` first keeps it from starting more while its tree is collected.
 */
export function killTree(pid: number): void {
  const signal = (target: number, name: NodeJS.Signals) => {
    try {
      process.kill(target, name);
    } catch {
      // already gone
    }
  };
  signal(pid, "SIGSTOP");
  const tree: number[] = [];
  const collect = (parent: number) => {
    for (const child of childrenOf(parent)) {
      tree.push(child);
      collect(child);
    }
  };
  collect(pid);
  for (const target of tree) signal(target, "SIGKILL");
  signal(pid, "SIGKILL");
}
