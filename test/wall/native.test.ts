import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bubblewrapLauncher, type Launcher } from "../../src/sandbox/wall/launcher.js";
import { hostWallTools } from "../../src/sandbox/wall/mode.js";
import { runProbe, type ProbeOptions } from "../../src/sandbox/wall/probe-run.js";
import type { NativeResult } from "../../src/sandbox/wall/probe-report.js";
import { repoRoot } from "../helpers/cli.js";
import { wallLauncher, wallMissing } from "../helpers/wall.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { cgroupSupport } from "../../src/sandbox/wall/cgroup.js";
import { DEFAULT_PROCESSES } from "../../src/sandbox/wall/limits.js";
import { assertWorkerIntact, victim } from "../sandbox/redteam-helpers.js";
import { waitUntil } from "../server/processes.js";

/*
 * From inside, as native code: test/wall/native/attack.c, built here with the machine's C compiler and run
 * inside the wall by the wall probe (without Node's permission model, which would refuse to start it), makes
 * the raw syscalls that code escaped from V8 would make. Never run it outside the wall: as root it mounts
 * over /tmp and changes the keyrings of the host.
 */

const EPERM = 1;
const ENOSYS = 38;
const ENOSPC = 28;

let dir: string;
let attack: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "hookbox-native-"));
  attack = join(dir, "attack");
  try {
    execFileSync("cc", ["-O1", "-o", attack, join(repoRoot, "test/wall/native/attack.c")], { stdio: "pipe" });
  } catch (error) {
    throw new Error(
      `cannot build the native stand-in (a C compiler is needed: apt-get install gcc; CI installs it): ${(error as Error).message}`,
    );
  }
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the stand-in inside the wall of `launcher` and returns its result. */
async function inside(
  launcher: Launcher,
  args: string[],
  options: ProbeOptions & { nativeTimeoutMs?: number } = {},
): Promise<NativeResult> {
  const plan = { natives: [{ path: "/hookbox/dist/attack", args, timeoutMs: options.nativeTimeoutMs ?? 10_000 }] };
  const report = await runProbe(launcher, plan, { innerLayer: false, binds: [attack], ...options });
  return report.natives![0];
}

async function syscalls(launcher: Launcher, keys = true): Promise<Record<string, number>> {
  const result = await inside(launcher, ["syscalls", ...(keys ? ["keys"] : [])]);
  expect(result, "the stand-in ran").toMatchObject({ status: 0 });
  return JSON.parse(result.stdout) as Record<string, number>;
}

/** The wall of this host, without the syscall filter: what the filter adds is what differs. */
function unfiltered(options: { hostIsRoot?: boolean } = {}): Launcher {
  const tools = hostWallTools();
  if ("reason" in tools) throw new Error(wallMissing(tools.reason));
  return bubblewrapLauncher({ ...tools, seccompFile: undefined, ...options });
}

const REFUSED = [
  "unshare_user",
  "unshare_net",
  "clone_newuser",
  "clone_newpid",
  "setns",
  "ptrace_traceme",
  "process_vm_readv",
  "add_key",
  "keyctl",
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "io_uring_setup",
  "mount",
  "chroot",
  "personality_set",
  "socket_inet",
  "socket_inet6",
  "socket_netlink",
  "socket_packet",
  "socketpair_inet",
  ...(process.arch === "x64" ? ["x32_getpid", "i386_getpid"] : []),
];

describe("the syscall filter, from inside with native code", () => {
  it("refuses every listed call with EPERM (clone3 with ENOSYS) and lets through what Node needs", async () => {
    const results = await syscalls(wallLauncher());
    for (const name of REFUSED) expect(results[name], name).toBe(EPERM);
    expect(results.clone3_newuser).toBe(ENOSYS);
    for (const name of ["clone_plain", "personality_query", "socket_unix", "socketpair_unix"]) expect(results[name], name).toBe(0);
  });

  it("the kernel reports the filter on the process (Seccomp 2, no new privileges)", async () => {
    const report = await runProbe(wallLauncher(), {}, { innerLayer: false });
    expect(report.self).toMatchObject({ seccomp: 2, noNewPrivs: 1 });
    expect(report.self!.seccompFilters).toBeGreaterThanOrEqual(1);
  });

  it("the same wall without the filter: what it refuses is then within reach", async () => {
    const results = await syscalls(unfiltered(), false);
    const root = process.getuid?.() === 0;
    // As root the wall makes no user namespace, and one can be made inside: what the filter stops.
    if (root) expect(results.unshare_user).toBe(0);
    for (const name of ["ptrace_traceme", "process_vm_readv", "io_uring_setup", "socket_inet", "socket_netlink", "personality_set"])
      expect(results[name], name).toBe(0);
    expect(results.clone3_newuser).not.toBe(ENOSYS);
  });
});

describe("no channel between two workers through the kernel's keyrings", () => {
  /** One worker adds a key to its user keyring; another, launched apart, looks for it and reads it. */
  async function keyFromOneWorkerToAnother(launcher: Launcher) {
    const name = `hookbox-${process.pid}-${Date.now()}`;
    const write = await inside(launcher, ["keyring-write", name]);
    const read = await inside(launcher, ["keyring-read", name]);
    expect([write.status, read.status], `${write.stderr} ${read.stderr}`).toEqual([0, 0]);
    return { write: JSON.parse(write.stdout) as { add_key: number }, read: JSON.parse(read.stdout) as { search: number; payload: string } };
  }

  it("a key one walled worker adds is not readable by another: the filter refuses both ends", async () => {
    const { write, read } = await keyFromOneWorkerToAnother(wallLauncher());
    expect(write.add_key).toBe(EPERM);
    expect(read).toMatchObject({ search: EPERM, payload: "" });
  });

  it("without the filter a root host's workers (all uid 65534 of the host's user namespace) pass the key: the channel the filter closes", async () => {
    if (process.getuid?.() !== 0) throw new Error("this control needs a root host (the wall's setpriv path); CI runs as root");
    const { write, read } = await keyFromOneWorkerToAnother(unfiltered({ hostIsRoot: true }));
    expect(write.add_key).toBe(0);
    expect(read).toMatchObject({ search: 0, payload: "tenant-a-secret" });
  });

  it("an unprivileged host's workers, each in bwrap's user namespace of its own, refuse it with the filter too", async () => {
    const tools = hostWallTools();
    if ("reason" in tools) throw new Error(wallMissing(tools.reason));
    const { write, read } = await keyFromOneWorkerToAnother(bubblewrapLauncher({ ...tools, hostIsRoot: false }));
    expect(write.add_key).toBe(EPERM);
    expect(read).toMatchObject({ search: EPERM, payload: "" });
  });
});

describe("no nested user namespace, on both paths", () => {
  it("root host (setpriv to 65534): refused by the filter", async () => {
    const results = await syscalls(wallLauncher(), false);
    expect([results.unshare_user, results.clone_newuser, results.clone3_newuser]).toEqual([EPERM, EPERM, ENOSYS]);
  });

  it("unprivileged host (bwrap's own user namespace): refused by --disable-userns even without the filter, and by the filter", async () => {
    const tools = hostWallTools();
    if ("reason" in tools) throw new Error(wallMissing(tools.reason));
    const own = bubblewrapLauncher({ ...tools, hostIsRoot: false });
    expect((await syscalls(own, false)).unshare_user).toBe(EPERM);
    expect((await syscalls(unfiltered({ hostIsRoot: false }), false)).unshare_user).toBe(ENOSPC);
  });
});

describe("resource limits, from inside", () => {
  it("rlimits: no core, no file growth, bounded descriptors and processes", async () => {
    const result = await inside(wallLauncher(), ["limits"]);
    const limits = JSON.parse(result.stdout) as Record<string, number>;
    expect(limits).toMatchObject({ core: 0, fsize: 0, nofile: 256 });
    expect(limits.nproc).toBe(process.getuid?.() === 0 ? 16384 : 128);
  });
});

/** This host's worker cgroups (one directory per walled process in the pids hierarchy). */
function workerCgroups(): string[] {
  return readdirSync(pidsDir("")).filter((name) => name.startsWith(`hookbox-${process.pid}-`));
}

/** The directory of cgroup `name` in the hierarchy that counts processes. */
function pidsDir(name: string): string {
  const support = cgroupSupport();
  if (!support.ok)
    throw new Error(`the wall's cgroups do not work on this machine (${support.reason}); CI runs as root on a host that has them`);
  return join(support.hierarchies.find((hierarchy) => hierarchy.controllers.includes("pids"))!.parent, name);
}

describe("bombs end their own worker, and only it", () => {
  const pool = createSandboxPool({ workers: 2, wall: "auto", prewarm: true });
  afterAll(() => pool.close());

  it("a fork bomb stops at its cgroup's process limit, the host and the other tenants are served, and ending the worker takes every process", async () => {
    // Its children sleep: this is the process bomb (CPU is the watchdog's, see docs/sandbox.md).
    const good = await victim(pool);
    await good.served(5000);
    const before = new Set(workerCgroups());
    let child: ChildProcess | undefined;
    const bomb = inside(wallLauncher(), ["forkbomb", "60000"], { nativeTimeoutMs: 90_000, timeoutMs: 90_000, started: (c) => (child = c) });
    const failed = bomb.then(
      () => "reported",
      (error: Error) => error.message,
    );
    await waitUntil(() => workerCgroups().some((name) => !before.has(name)), 5000, "the bomb's cgroup");
    const cgroup = pidsDir(workerCgroups().find((name) => !before.has(name))!);
    // The kernel counts the refusals: the bomb is at its limit, and every further fork fails.
    await waitUntil(() => Number(readFileSync(join(cgroup, "pids.events"), "utf8").split(" ")[1]) > 0, 10_000, "a refused fork");
    expect(Number(readFileSync(join(cgroup, "pids.current"), "utf8"))).toBe(DEFAULT_PROCESSES);
    for (let i = 0; i < 5; i++) {
      await good.served(2000);
      execFileSync("true"); // the host still starts processes
    }
    await assertWorkerIntact(pool, "after-fork-bomb");
    // What the supervisor does with a worker whose call is overdue: the whole tree goes, within seconds.
    const killedAt = performance.now();
    wallLauncher().kill(child!);
    expect(await failed).toMatch(/killed by SIGKILL/);
    // The cgroup can only be removed once every process in it is gone.
    await waitUntil(() => !existsSync(cgroup), 5000, "every process of the fork bomb to be gone");
    expect(performance.now() - killedAt).toBeLessThan(5000);
  });

  it("a memory bomb is ended by the kernel inside its own cgroup; the process beside it and the other tenants are served", async () => {
    const good = await victim(pool);
    const bomb = inside(wallLauncher(), ["membomb"], { resources: { memoryBytes: 256 * 1048576 }, nativeTimeoutMs: 20_000 });
    let done = false;
    void bomb.finally(() => (done = true));
    do await good.served(2000);
    while (!done);
    const result = await bomb;
    // The OOM killer chose the bomb (the largest process of the cgroup); the probe that started it reported.
    expect(result).toMatchObject({ signal: "SIGKILL", stdout: "" });
    await assertWorkerIntact(pool, "after-memory-bomb");
  });
});
