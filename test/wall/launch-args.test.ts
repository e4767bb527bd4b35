import { beforeEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import { programOf, waitUntil } from "../server/processes.js";
import { bwrapArgs, NOBODY, setprivArgs } from "../../src/sandbox/wall/bwrap-args.js";
import { CLOSE_FDS_FLAG, closeInheritedFds, inheritedFds } from "../../src/sandbox/wall/inherited-fds.js";
import { permissionFlags } from "../../src/sandbox/wall/inner-layer.js";
import {
  DEFAULT_MEMORY_BYTES,
  DEFAULT_OPEN_FILES,
  DEFAULT_PROCESSES,
  prlimitArgs,
  resourceLimits,
  SHARED_UID_PROCESSES,
} from "../../src/sandbox/wall/limits.js";
import type { WallView } from "../../src/sandbox/wall/view.js";

/*
 * The second wall as the data the launcher builds (docs/sandbox.md, "Second wall" and "Resource limits"): bwrap's
 * command line, setpriv's, prlimit's and Node's permission flags, checked rule by rule on the built value. The
 * real bubblewrap tests (inside.test.ts, outside.test.ts, native.test.ts) show the same rules hold on a walled
 * process; these show which argument holds each, in milliseconds.
 */

const view: WallView = {
  binds: [
    { source: "/opt/node-26/bin/node", dest: "/hookbox/bin/node" },
    { source: "/srv/app/dist/sandbox-worker.js", dest: "/hookbox/dist/sandbox-worker.js" },
    { source: "/srv/app/node_modules/isolated-vm", dest: "/hookbox/node_modules/isolated-vm" },
    { source: "/lib/x86_64-linux-gnu/libc.so.6", dest: "/lib/x86_64-linux-gnu/libc.so.6" },
    { source: "/lib64/ld-linux-x86-64.so.2", dest: "/lib64/ld-linux-x86-64.so.2" },
  ],
  readable: ["/hookbox/dist/sandbox-worker.js", "/hookbox/node_modules/isolated-vm"],
  entries: new Map([["/srv/app/dist/sandbox-worker.js", "/hookbox/dist/sandbox-worker.js"]]),
  env: { LIBC: "glibc" },
};
const NAMESPACES = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup"];
const DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/** Every occurrence of `flag` with the `count` arguments after it. */
function uses(args: string[], flag: string, count: number): string[][] {
  const found: string[][] = [];
  args.forEach((arg, at) => {
    if (arg === flag) found.push(args.slice(at + 1, at + 1 + count));
  });
  return found;
}

/** The flags of bwrap's command line, without their arguments. */
const FLAG_ARITY: Record<string, number> = {
  "--unshare-pid": 0,
  "--unshare-net": 0,
  "--unshare-ipc": 0,
  "--unshare-uts": 0,
  "--unshare-cgroup": 0,
  "--unshare-user": 0,
  "--disable-userns": 0,
  "--die-with-parent": 0,
  "--clearenv": 0,
  "--hostname": 1,
  "--cap-drop": 1,
  "--cap-add": 1,
  "--perms": 1,
  "--dir": 1,
  "--proc": 1,
  "--tmpfs": 1,
  "--remount-ro": 1,
  "--chdir": 1,
  "--seccomp": 1,
  "--ro-bind": 2,
  "--dev-bind": 2,
  "--setenv": 2,
};

/** bwrap's command line as [flag, ...arguments] steps; fails on anything it does not know. */
function steps(args: string[]): string[][] {
  const out: string[][] = [];
  for (let at = 0; at < args.length;) {
    const arity = FLAG_ARITY[args[at]];
    expect(arity, `a known bwrap flag at ${at}: ${args[at]}`).toBeTypeOf("number");
    out.push(args.slice(at, at + 1 + arity));
    at += 1 + arity;
  }
  return out;
}

describe("bwrap's command line", () => {
  for (const hostIsRoot of [true, false]) {
    // Built in each test, so a broken line fails that test (not the file's collection).
    let args: string[] = [];
    let parsed: string[][] = [];
    let names: string[] = [];
    beforeEach(() => {
      args = bwrapArgs({ view, env: { LIBC: "glibc", HOOKBOX_WORKER_POLL_US: "0" }, hostIsRoot, seccompFd: 3 });
      parsed = steps(args);
      names = parsed.map((step) => step[0]);
    });

    it(`${hostIsRoot ? "root" : "unprivileged"} host: new pid, net, ipc, uts and cgroup namespaces, hostname sandbox, dies with the host`, () => {
      for (const flag of NAMESPACES) expect(names, flag).toContain(flag);
      expect(names).toContain("--die-with-parent");
      expect(uses(args, "--hostname", 1)).toEqual([["sandbox"]]);
      // No --new-session (docs/sandbox.md: no terminal exists inside instead) and no shared namespace.
      expect(args.filter((arg) => /^--(share|new-session|unshare-all)/.test(arg))).toEqual([]);
    });

    it(`${hostIsRoot ? "root" : "unprivileged"} host: every capability dropped${hostIsRoot ? "; only what setpriv needs to drop the user is added back" : ", in a user namespace that can make no other"}`, () => {
      expect(uses(args, "--cap-drop", 1)).toEqual([["ALL"]]);
      if (hostIsRoot) {
        expect(uses(args, "--cap-add", 1)).toEqual([["CAP_SETUID"], ["CAP_SETGID"], ["CAP_SETPCAP"]]);
        // A user namespace would map the worker's uid back to root on the host.
        expect(names).not.toContain("--unshare-user");
        expect(names).not.toContain("--disable-userns");
      } else {
        expect(names).not.toContain("--cap-add");
        expect(names).toContain("--unshare-user");
        expect(names).toContain("--disable-userns");
      }
    });

    it(`${hostIsRoot ? "root" : "unprivileged"} host: a read-only root holding only the view's binds, read-only, a fresh /proc, five devices, an empty read-only /tmp`, () => {
      expect(uses(args, "--ro-bind", 2)).toEqual(view.binds.map((bind) => [bind.source, bind.dest]));
      // Nothing is bound writable, and the only device binds are the five harmless devices at their own paths.
      expect(args.filter((arg) => ["--bind", "--bind-try", "--dev-bind-try", "--ro-bind-try"].includes(arg))).toEqual([]);
      expect(uses(args, "--dev-bind", 2)).toEqual(DEVICES.map((device) => [device, device]));
      expect(uses(args, "--proc", 1)).toEqual([["/proc"]]);
      expect(uses(args, "--tmpfs", 1)).toEqual([["/dev"], ["/tmp"]]);
      expect(uses(args, "--remount-ro", 1)).toEqual([["/tmp"], ["/dev"], ["/"]]);
      // The devices are bound into the /dev tmpfs (after it), and the remounts come after everything they cover.
      const at = (step: string[]) => parsed.findIndex((other) => other.join("\0") === step.join("\0"));
      for (const device of DEVICES) expect(at(["--dev-bind", device, device])).toBeGreaterThan(at(["--tmpfs", "/dev"]));
      expect(at(["--remount-ro", "/tmp"])).toBeGreaterThan(at(["--tmpfs", "/tmp"]));
      const lastMount = Math.max(
        ...parsed.map((step, index) => (["--ro-bind", "--dev-bind", "--proc", "--tmpfs", "--dir"].includes(step[0]) ? index : -1)),
      );
      expect(at(["--remount-ro", "/"])).toBeGreaterThan(lastMount);
      expect(uses(args, "--chdir", 1)).toEqual([["/"]]);
    });

    it(`${hostIsRoot ? "root" : "unprivileged"} host: each bind's parent directories are made 0755 first, parents before children, once`, () => {
      const dirs = uses(args, "--dir", 1).map(([dir]) => dir);
      expect(dirs).toEqual([
        "/hookbox",
        "/hookbox/bin",
        "/hookbox/dist",
        "/hookbox/node_modules",
        "/lib",
        "/lib/x86_64-linux-gnu",
        "/lib64",
      ]);
      expect(uses(args, "--perms", 3)).toEqual(dirs.map((dir) => ["0755", "--dir", dir]));
      const firstBind = names.indexOf("--ro-bind");
      expect(parsed.findLastIndex((step) => step[0] === "--dir")).toBeLessThan(firstBind);
    });

    it(`${hostIsRoot ? "root" : "unprivileged"} host: no host variable gets through; only the ones asked for are set, after the environment is cleared`, () => {
      expect(names).toContain("--clearenv");
      expect(uses(args, "--setenv", 2)).toEqual([
        ["LIBC", "glibc"],
        ["HOOKBOX_WORKER_POLL_US", "0"],
      ]);
      expect(parsed.findIndex((step) => step[0] === "--setenv")).toBeGreaterThan(names.indexOf("--clearenv"));
    });

    it(`${hostIsRoot ? "root" : "unprivileged"} host: the syscall filter is read from the descriptor given, installed after every mount`, () => {
      expect(uses(args, "--seccomp", 1)).toEqual([["3"]]);
      expect(names.indexOf("--seccomp")).toBeGreaterThan(names.lastIndexOf("--remount-ro"));
    });
  }

  it("without a filter descriptor (an architecture the wall has no filter for) there is no --seccomp", () => {
    const args = bwrapArgs({ view, env: {}, hostIsRoot: true });
    expect(args).not.toContain("--seccomp");
    expect(args.some((arg) => arg.includes("undefined"))).toBe(false);
    expect(args).not.toContain("--setenv");
  });

  it("a bind at the root's top level needs no parent directory; one deep bind gets its whole chain", () => {
    const args = bwrapArgs({
      view: {
        ...view,
        binds: [
          { source: "/x", dest: "/hookbox" },
          { source: "/y", dest: "/a/b/c/d" },
        ],
      },
      env: {},
      hostIsRoot: false,
    });
    expect(uses(args, "--dir", 1).map(([dir]) => dir)).toEqual(["/a", "/a/b", "/a/b/c"]);
  });
});

describe("setpriv (root host)", () => {
  it("drops to nobody, with no groups, no capabilities in any set and no new privileges, before the command", () => {
    expect(NOBODY).toBe(65534);
    expect(setprivArgs()).toEqual([
      "--reuid=65534",
      "--regid=65534",
      "--clear-groups",
      "--inh-caps=-all",
      "--bounding-set=-all",
      "--no-new-privs",
      "--",
    ]);
  });
});

describe("resource limits", () => {
  it("defaults: 2560 MB of memory (the cgroup's), 128 processes, 256 open files; a requested memory ceiling wins", () => {
    expect(DEFAULT_MEMORY_BYTES).toBe(2560 * 1024 * 1024);
    expect(resourceLimits()).toEqual({ memoryBytes: DEFAULT_MEMORY_BYTES, processes: 128, openFiles: 256 });
    expect([DEFAULT_PROCESSES, DEFAULT_OPEN_FILES, SHARED_UID_PROCESSES]).toEqual([128, 256, 16384]);
    expect(resourceLimits({ memoryBytes: 300 * 1048576 })).toEqual({ memoryBytes: 300 * 1048576, processes: 128, openFiles: 256 });
    expect(resourceLimits({})).toEqual(resourceLimits());
  });

  it("prlimit: hard and soft limits alike, no core, no file growth, 256 descriptors; processes 128 per user namespace, 16384 for the shared uid", () => {
    const limits = resourceLimits();
    expect(prlimitArgs(limits, { sharedUid: false })).toEqual(["--nproc=128:128", "--nofile=256:256", "--fsize=0:0", "--core=0:0", "--"]);
    expect(prlimitArgs(limits, { sharedUid: true })).toEqual([
      "--nproc=16384:16384",
      "--nofile=256:256",
      "--fsize=0:0",
      "--core=0:0",
      "--",
    ]);
    // No memory rlimit (the cgroup bounds memory): RLIMIT_AS or RLIMIT_DATA would bound the number of tenants.
    expect(prlimitArgs({ memoryBytes: 1, processes: 7, openFiles: 9 }, { sharedUid: false })).toEqual([
      "--nproc=7:7",
      "--nofile=9:9",
      "--fsize=0:0",
      "--core=0:0",
      "--",
    ]);
  });
});

describe("Node's permission model inside", () => {
  it("on, with addons, reading only the files named, and nothing else granted", () => {
    expect(permissionFlags(["/hookbox/dist/sandbox-worker.js", "/hookbox/node_modules/isolated-vm"])).toEqual([
      "--permission",
      "--allow-addons",
      "--allow-fs-read=/hookbox/dist/sandbox-worker.js",
      "--allow-fs-read=/hookbox/node_modules/isolated-vm",
      "--disable-warning=SecurityWarning",
    ]);
    expect(permissionFlags([])).toEqual(["--permission", "--allow-addons", "--disable-warning=SecurityWarning"]);
  });
});

describe("inherited descriptors", () => {
  /** Whether `fd` has close-on-exec, from the kernel's own account. */
  const closeOnExec = (fd: number) =>
    (parseInt(/^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))![1], 8) & 0o2000000) !== 0;

  it("names exactly the descriptors from the one given that a child would inherit (no close-on-exec)", async () => {
    // A process whose parent left 7 and 9 open without close-on-exec, as a careless supervisor's shell does.
    const held = spawn("/bin/sh", ["-c", "exec 7>/dev/null 9</dev/null; exec sleep 60"], { stdio: "ignore" });
    try {
      await waitUntil(() => programOf(held.pid!) === "sleep", 10_000, "the process holding 7 and 9");
      // (Plus whatever this test's own parent left it without close-on-exec, which the process inherited too.)
      const all = inheritedFds(0, held.pid!);
      expect(all).toEqual(expect.arrayContaining([0, 1, 2, 7, 9]));
      for (const from of [1, 3, 7, 8, 10]) expect(inheritedFds(from, held.pid!), `from ${from}`).toEqual(all.filter((fd) => fd >= from));
      expect(inheritedFds(8, held.pid!)).toContain(9);
      expect(inheritedFds(8, held.pid!)).not.toContain(7);
    } finally {
      held.kill("SIGKILL");
    }
    expect(inheritedFds(0, 2 ** 22 + 1), "a process that is gone").toEqual([]);
    // This process: Node opens files close-on-exec, so this one is never named; every one named lacks the flag.
    const own = openSync("/dev/null", "r");
    try {
      expect(closeOnExec(own)).toBe(true);
      const all = inheritedFds(0);
      expect(all).not.toContain(own);
      for (const fd of all) expect(closeOnExec(fd), `fd ${fd}`).toBe(false);
    } finally {
      closeSync(own);
    }
  });

  it("the flag the launcher names them with", () => {
    expect(CLOSE_FDS_FLAG).toBe("--hookbox-close-fds=");
  });

  it("inside, closes each descriptor named on the command line, skips empty entries, and ignores one already closed", () => {
    const first = openSync("/dev/null", "r");
    const second = openSync("/dev/null", "r");
    const kept = openSync("/dev/null", "r");
    try {
      closeInheritedFds(["node", "entry.js", `${CLOSE_FDS_FLAG}${first},${second},,999999,`]);
      for (const fd of [first, second]) expect(() => fstatSync(fd), `fd ${fd}`).toThrow(/EBADF/);
      // An empty entry is not fd 0.
      expect(() => fstatSync(0)).not.toThrow();
      expect(() => fstatSync(kept)).not.toThrow();
      // Without the flag nothing is closed.
      closeInheritedFds(["node", "entry.js", String(kept)]);
      expect(() => fstatSync(kept)).not.toThrow();
    } finally {
      closeSync(kept);
    }
  });
});
