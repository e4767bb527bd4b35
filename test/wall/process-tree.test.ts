import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { innermostPid, killTree, processTree, scanForChildren } from "../../src/sandbox/wall/process-tree.js";
import { isRunning, programOf, waitUntil } from "../server/processes.js";

/*
 * The walled Node process is the innermost of bwrap's chain, and killing a worker takes its whole tree
 * (docs/sandbox.md, "Second wall"): checked on real process chains, without bwrap, in milliseconds.
 */

let dir: string;
let chainScript: string;
const started: ChildProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "hookbox-process-tree-"));
  chainScript = join(dir, "chain.sh");
  // chain.sh N: N shells, each the child of the one before, the last one's child a sleep (dash never execs the last command).
  writeFileSync(chainScript, 'if [ "$1" -gt 0 ]; then /bin/sh "$0" $(($1 - 1)); else sleep 60; fi\n:\n');
});

afterAll(() => {
  for (const child of started) if (child.pid !== undefined) killTree(child.pid);
  rmSync(dir, { recursive: true, force: true });
});

/** A chain of `depth` shells under a new process, the pids root first, once all are there. */
async function chain(depth: number): Promise<{ child: ChildProcess; pids: number[] }> {
  const child = spawn("/bin/sh", [chainScript, String(depth)], { stdio: "ignore" });
  started.push(child);
  let pids: number[] = [];
  await waitUntil(
    () => {
      pids = [child.pid!];
      for (let next = children(child.pid!)[0]; next !== undefined; next = children(next)[0]) pids.push(next);
      return pids.length === depth + 2 && programOf(pids.at(-1)!) === "sleep";
    },
    10_000,
    `a chain of ${depth} shells and a sleep`,
  );
  return { child, pids };
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

describe("the process tree of a launched process", () => {
  it("the innermost process follows children down (bwrap, its init, Node), at most 8 steps; a process without children is its own", async () => {
    const short = await chain(2);
    expect(innermostPid(short.pids[0])).toBe(short.pids.at(-1));
    expect(innermostPid(short.pids.at(-1)!)).toBe(short.pids.at(-1));
    const long = await chain(10);
    expect(innermostPid(long.pids[0])).toBe(long.pids[8]);
  });

  it("every process under a pid, parents first, bounded by the limit", async () => {
    const { pids } = await chain(3);
    expect(processTree(pids[0], 100)).toEqual(pids);
    expect(processTree(pids[0], 3)).toEqual(pids.slice(0, 3));
    expect(processTree(pids[0], 1)).toEqual([pids[0]]);
    // One parent with three children: the limit holds within a parent's children too.
    const fan = spawn("/bin/sh", ["-c", "sleep 60 & sleep 60 & sleep 60 & wait"], { stdio: "ignore" });
    started.push(fan);
    await waitUntil(() => children(fan.pid!).length === 3, 10_000, "three children");
    expect(processTree(fan.pid!, 2)).toEqual([fan.pid, children(fan.pid!)[0]]);
    expect(processTree(fan.pid!, 10)).toEqual([fan.pid, ...children(fan.pid!)]);
    // A process with helper threads (Node) lists the children any of its threads started.
    const node = spawn(
      process.execPath,
      ["-e", "require('child_process').spawn('sleep', ['60'], { stdio: 'ignore' }); setInterval(() => {}, 1000);"],
      {
        stdio: "ignore",
      },
    );
    started.push(node);
    await waitUntil(() => children(node.pid!).length === 1, 10_000, "Node to start its child");
    expect(processTree(node.pid!, 10)).toEqual([node.pid, children(node.pid!)[0]]);
  });

  it("without the kernel's children lists, the parent field of each process's stat finds the same children", async () => {
    const { pids } = await chain(1);
    expect(scanForChildren(pids[0])).toEqual([pids[1]]);
    expect(scanForChildren(pids.at(-1)!)).toEqual([]);
  });

  it("a pid that is gone has no tree: itself alone", () => {
    const gone = 2 ** 22 + 1; // above pid_max's ceiling: never a process
    expect(innermostPid(gone)).toBe(gone);
    expect(processTree(gone, 10)).toEqual([gone]);
  });

  it("killing a tree ends every process of it, the root last", async () => {
    const { child, pids } = await chain(3);
    const exited = new Promise((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    killTree(pids[0]);
    expect(await exited).toBe("SIGKILL");
    await waitUntil(() => pids.every((pid) => !isRunning(pid)), 10_000, "every process of the tree to end");
    killTree(pids[0]); // gone already: nothing to do, no error
  });

  it("a root that ignores SIGTERM is killed all the same", async () => {
    const stubborn = spawn("/bin/sh", ["-c", 'trap "" TERM; sleep 60; :'], { stdio: "ignore" });
    started.push(stubborn);
    await waitUntil(() => children(stubborn.pid!).length === 1, 10_000, "the shell to start its child");
    const exited = new Promise((resolve) => stubborn.once("exit", (_code, signal) => resolve(signal)));
    killTree(stubborn.pid!);
    expect(await exited).toBe("SIGKILL");
  });
});
