import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { threadId } from "node:worker_threads";
import {
  cgroupSupport,
  isWorkerCgroupPath,
  perController,
  removeStale,
  settings,
  unified,
  workerCgroup,
  type WorkerCgroup,
} from "../../src/sandbox/wall/cgroup.js";
import {
  cgroupCheck,
  cordonsCheck,
  filterCheck,
  limitsCheck,
  measureCgroup,
  userNamespaceCheck,
} from "../../src/sandbox/wall/doctor-depth.js";
import type { SelfReport } from "../../src/sandbox/wall/probe-report.js";
import { resourceLimits } from "../../src/sandbox/wall/limits.js";
import { FILTER_MODE } from "../../src/sandbox/wall/seccomp/filter.js";
import { waitUntil } from "../server/processes.js";

/*
 * A walled worker's own cgroup (docs/sandbox.md, "Resource limits": its memory ceiling, no swap on v2, its pids
 * limit, removed once it is gone, and those a killed host left behind removed by the next) and the doctor's checks
 * of the wall in depth, on the values they read. test/wall/native.test.ts bombs a real walled worker.
 */

const GONE = 2 ** 22 + 1; // above pid_max's ceiling: never a live process
const started: ChildProcess[] = [];

/** This process's cgroup directories (the parents of worker cgroups), read apart from cgroup.ts. */
function ownCgroupDirs(): string[] {
  const lines = readFileSync("/proc/self/cgroup", "utf8").trim().split("\n");
  if (existsSync("/sys/fs/cgroup/cgroup.controllers"))
    return lines.filter((line) => line.startsWith("0::")).map((line) => join("/sys/fs/cgroup", line.slice(3)));
  return ["memory", "pids"].flatMap((controller) => {
    const line = lines.find((entry) => entry.split(":")[1]?.split(",").includes(controller));
    return line === undefined ? [] : [join("/sys/fs/cgroup", controller, line.split(":").slice(2).join(":"))];
  });
}

// Left behind before this process first looks at cgroups: one of a host that is gone, one of a live process (pid 1),
// one of this process's own, and one that is not hookbox's.
const planted = ownCgroupDirs().flatMap((parent) =>
  [`hookbox-${GONE}-t0-00000000-1`, "hookbox-1-t0-00000000-1", `hookbox-${process.pid}-t77-00000000-1`, `not-hookbox-${GONE}`].map((name) =>
    join(parent, name),
  ),
);

beforeAll(() => {
  for (const dir of planted) mkdirSync(dir);
});

afterAll(() => {
  for (const child of started) child.kill("SIGKILL");
  for (const dir of planted)
    try {
      rmdirSync(dir);
    } catch {
      // removed by the test
    }
});

/** A sleeping process, for a cgroup to hold. */
function sleeper(): ChildProcess {
  const child = spawn("sleep", ["60"], { stdio: "ignore" });
  started.push(child);
  return child;
}

describe("worker cgroups", () => {
  it("names: hookbox-<host pid>-t<thread>-<8 hex>-<n>, and nothing else is taken for one", () => {
    expect(isWorkerCgroupPath("/user.slice/hookbox-123-t0-0123abcd-7")).toBe(true);
    expect(isWorkerCgroupPath("/hookbox-1-t12-ffffffff-42")).toBe(true);
    for (const path of [
      "hookbox-123-t0-0123abcd-7",
      "/hookbox-123-t0-0123abcd-7/child",
      "/hookbox-123-t0-0123abcd-",
      "/hookbox-123-t0-0123abc-7",
      "/hookbox-123-t0-0123abcg-7",
      "/hookbox-123-0-0123abcd-7",
      "/hookbox-x-t0-0123abcd-7",
      "/hookbox-123-t0-0123abcd-7x",
      "/xhookbox-123-t0-0123abcd-7",
      "/hookbox-123-tx-0123abcd-7",
    ])
      expect(isWorkerCgroupPath(path), path).toBe(false);
  });

  it("this host makes them (cgroup v1 as root here, or v2 delegated); what a killed host left is removed, nothing else", () => {
    const support = cgroupSupport();
    expect(support, "cgroups are needed for the wall's per-worker limits: run the tests as root or in a delegated cgroup").toMatchObject({
      ok: true,
    });
    if (!support.ok) return;
    const v2 = existsSync("/sys/fs/cgroup/cgroup.controllers");
    expect(support.version).toBe(v2 ? 2 : 1);
    expect(support.hierarchies.map((hierarchy) => hierarchy.parent).sort()).toEqual(ownCgroupDirs().sort());
    expect(support.hierarchies.map((hierarchy) => hierarchy.controllers)).toEqual(v2 ? [["memory", "pids"]] : [["memory"], ["pids"]]);
    for (const dir of planted) expect(existsSync(dir), dir).toBe(!basename(dir).startsWith(`hookbox-${GONE}-`));
    // The cgroup made to check the host can is gone too.
    const probe = new RegExp(`^hookbox-${process.pid}-t${threadId}-[0-9a-f]{8}-probe$`);
    for (const parent of ownCgroupDirs()) expect(readdirSync(parent).filter((name) => probe.test(name))).toEqual([]);
    expect(cgroupSupport()).toBe(support);
  });

  it("one per worker, with its memory ceiling (v2: and no swap) and process limit, each under the host's own cgroup", () => {
    const support = cgroupSupport();
    if (!support.ok) throw new Error(support.reason);
    const first = workerCgroup(resourceLimits({ memoryBytes: 300 * 1048576 }))!;
    const second = workerCgroup(resourceLimits())!;
    try {
      for (const cgroup of [first, second]) {
        expect(cgroup.dirs.map(dirname).sort()).toEqual(support.hierarchies.map((hierarchy) => resolve(hierarchy.parent)).sort());
        expect(cgroup.procsFiles).toEqual(cgroup.dirs.map((dir) => join(dir, "cgroup.procs")));
        for (const dir of cgroup.dirs) {
          expect(isWorkerCgroupPath(dir), dir).toBe(true);
          expect(basename(dir)).toMatch(new RegExp(`^hookbox-${process.pid}-t${threadId}-[0-9a-f]{8}-\\d+$`));
        }
      }
      expect(basename(first.dirs[0]).replace(/-\d+$/, "")).toBe(basename(second.dirs[0]).replace(/-\d+$/, ""));
      expect(Number(/-(\d+)$/.exec(second.dirs[0])![1])).toBe(Number(/-(\d+)$/.exec(first.dirs[0])![1]) + 1);
      const value = (cgroup: WorkerCgroup, file: string) => {
        const dir = cgroup.dirs.find((candidate) => existsSync(join(candidate, file)));
        return dir === undefined ? undefined : readFileSync(join(dir, file), "utf8").trim();
      };
      if (support.version === 2) {
        expect(value(first, "memory.max")).toBe(String(300 * 1048576));
        expect(value(first, "memory.swap.max")).toBe("0");
        expect(value(second, "memory.max")).toBe(String(2560 * 1048576));
      } else {
        expect(value(first, "memory.limit_in_bytes")).toBe(String(300 * 1048576));
        expect(value(second, "memory.limit_in_bytes")).toBe(String(2560 * 1048576));
      }
      expect(value(first, "pids.max")).toBe("128");
      expect(value(second, "pids.max")).toBe("128");
    } finally {
      first.remove();
      second.remove();
    }
    for (const dir of [...first.dirs, ...second.dirs]) expect(existsSync(dir), dir).toBe(false);
  });

  it("what each version's files get: v2 memory.max, no swap and pids.max; v1 memory.limit_in_bytes and pids.max", () => {
    const limits = resourceLimits({ memoryBytes: 300 * 1048576 });
    expect(settings(2, ["memory", "pids"], limits)).toEqual([
      ["memory.max", String(300 * 1048576)],
      ["memory.swap.max", "0"],
      ["pids.max", "128"],
    ]);
    expect(settings(1, ["memory"], limits)).toEqual([["memory.limit_in_bytes", String(300 * 1048576)]]);
    expect(settings(1, ["pids"], limits)).toEqual([["pids.max", "128"]]);
  });

  it("a limit the kernel refuses: no cgroup is left half made, and the error says so", () => {
    const support = cgroupSupport();
    if (!support.ok) throw new Error(support.reason);
    // (Other processes may make cgroups beside ours meanwhile: count only this process's.)
    const ours = () =>
      support.hierarchies.flatMap((hierarchy) =>
        readdirSync(hierarchy.parent).filter((name) => name.startsWith(`hookbox-${process.pid}-`)),
      );
    const before = ours();
    expect(() => workerCgroup({ memoryBytes: -5, processes: 128, openFiles: 256 })).toThrow(/^cannot set up the worker's cgroup: .*EINVAL/);
    expect(ours()).toEqual(before);
  });

  it("removed only once its processes are gone, then at once", async () => {
    const cgroup = workerCgroup(resourceLimits())!;
    const child = sleeper();
    for (const file of cgroup.procsFiles) writeFileSync(file, String(child.pid));
    const measure = measureCgroup(child.pid!);
    expect(measure).toEqual({ dirs: cgroup.dirs, memoryBytes: 2560 * 1048576, processes: 128 });
    cgroup.remove();
    for (const dir of cgroup.dirs) expect(existsSync(dir), dir).toBe(true);
    child.kill("SIGKILL");
    await waitUntil(() => cgroup.dirs.every((dir) => !existsSync(dir)), 10_000, "the emptied cgroup to be removed");
  });
});

describe("finding where worker cgroups go (a mounted hierarchy's files, laid out in a temp directory)", () => {
  let root: string;
  beforeAll(() => (root = mkdtempSync(join(tmpdir(), "hookbox-cgroup-tree-"))));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("v2: the host's own cgroup, when it hands memory and pids to its children", () => {
    const host = join(root, "v2-ok/system.slice/host.service");
    mkdirSync(host, { recursive: true });
    writeFileSync(join(host, "cgroup.subtree_control"), "cpu memory  pids\n");
    expect(unified(["1:name=systemd:/elsewhere", "0::/system.slice/host.service"], join(root, "v2-ok"))).toEqual([
      { parent: host, controllers: ["memory", "pids"] },
    ]);
  });

  it("v2: asks for what is missing, and names the cgroup when it is not handed down; no v2 line is said so", async () => {
    const host = join(root, "v2-no/user.slice");
    mkdirSync(host, { recursive: true });
    const control = join(host, "cgroup.subtree_control");
    writeFileSync(control, "memory");
    expect(unified(["0::/user.slice"], join(root, "v2-no"))).toEqual({
      ok: false,
      reason: `cgroup v2 ${host} does not delegate memory and pids to its children; run the host in a delegated cgroup`,
    });
    // It asked for pids (a real cgroup.subtree_control takes "+pids"; this plain file keeps the last write).
    expect(readFileSync(control, "utf8")).toBe("+pids");
    // Both handed down already: nothing is written.
    writeFileSync(control, "pids memory");
    expect(unified(["0::/user.slice"], join(root, "v2-no"))).toEqual([{ parent: host, controllers: ["memory", "pids"] }]);
    expect(readFileSync(control, "utf8")).toBe("pids memory");
    rmSync(control);
    expect(unified(["0::/user.slice"], join(root, "v2-no"))).toMatchObject({ ok: false });
    // Only memory handed down, and the host cannot change that (this control refuses writes and keeps saying
    // "memory", as a cgroup whose parent withholds pids does): refused, never a cgroup without a process limit.
    copyFileSync("/bin/sleep", join(root, "memory"));
    const holder = spawn(join(root, "memory"), ["60"], { stdio: "ignore" });
    started.push(holder);
    await waitUntil(
      () => existsSync(`/proc/${holder.pid}/comm`) && readFileSync(`/proc/${holder.pid}/comm`, "utf8") === "memory\n",
      10_000,
      "a control that reads memory",
    );
    rmSync(control); // (the call above wrote its requests into a new plain file)
    symlinkSync(`/proc/${holder.pid}/comm`, control);
    expect(unified(["0::/user.slice"], join(root, "v2-no"))).toEqual({
      ok: false,
      reason: `cgroup v2 ${host} does not delegate memory and pids to its children; run the host in a delegated cgroup`,
    });
    expect(readFileSync(control, "utf8")).toBe("memory\n");
    expect(unified(["1:name=systemd:/", "2:memory:/"], join(root, "v2-no"))).toEqual({
      ok: false,
      reason: "no cgroup v2 entry in /proc/self/cgroup",
    });
  });

  it("v1: one hierarchy per controller, at the host's path in each (a line may name several controllers)", () => {
    const v1 = join(root, "v1");
    for (const controller of ["memory", "pids"]) {
      mkdirSync(join(v1, controller), { recursive: true });
      writeFileSync(join(v1, controller, "cgroup.procs"), "");
    }
    const lines = ["12:pids:/docker/abc", "4:cpu,memory,cpuacct:/docker/a:b", "1:name=systemd:/"];
    expect(perController(lines, v1)).toEqual([
      { parent: join(v1, "memory/docker/a:b"), controllers: ["memory"] },
      { parent: join(v1, "pids/docker/abc"), controllers: ["pids"] },
    ]);
    expect(perController(["12:pids:/", "0::/"], v1)).toEqual({ ok: false, reason: `no memory cgroup hierarchy at ${join(v1, "memory")}` });
    rmSync(join(v1, "pids/cgroup.procs"));
    expect(perController(lines, v1)).toEqual({ ok: false, reason: `no pids cgroup hierarchy at ${join(v1, "pids")}` });
  });

  it("what a killed host left behind is removed; a live host's, this process's own and others' are kept", () => {
    const parent = join(root, "stale");
    const names = [
      `hookbox-${GONE}-t0-00000000-1`,
      "hookbox-1-t0-00000000-1",
      `hookbox-${process.pid}-t3-00000000-2`,
      `other-${GONE}`,
      `xhookbox-${GONE}-t0-00000000-1`,
    ];
    for (const name of names) mkdirSync(join(parent, name), { recursive: true });
    removeStale(parent);
    expect(names.filter((name) => existsSync(join(parent, name)))).toEqual(names.slice(1));
    removeStale(join(root, "no-such-dir")); // nothing to read: nothing done
  });
});

describe("the doctor's checks of the wall in depth", () => {
  const self = (fields: Partial<SelfReport>): SelfReport => ({ seccomp: 2, seccompFilters: 1, noNewPrivs: 1, limits: {}, ...fields });

  it("syscall-filter: holds when the kernel says Seccomp 2 inside", () => {
    expect(filterCheck(self({}))).toEqual({
      name: "syscall-filter",
      ok: true,
      detail: `in force inside (Seccomp 2, ${process.arch === "arm64" ? "aarch64" : "x86_64"}): ${FILTER_MODE}`,
    });
    expect(filterCheck(self({ seccomp: 0 }))).toEqual({ name: "syscall-filter", ok: false, detail: "not in force inside (Seccomp: 0)" });
    expect(filterCheck(self({ seccomp: 1 }))).toMatchObject({ ok: false });
    expect(filterCheck(null)).toEqual({ name: "syscall-filter", ok: false, detail: "not in force inside (Seccomp: unreadable)" });
  });

  it("user-namespaces: holds when unshare --user failed inside, and says why", () => {
    const run = { target: "unshare --user", signal: null, stdout: "" };
    expect(userNamespaceCheck(undefined)).toEqual({
      name: "user-namespaces",
      ok: false,
      detail: "not measured: util-linux's unshare is not installed here",
    });
    expect(userNamespaceCheck({ ...run, status: 0, stderr: "" })).toEqual({
      name: "user-namespaces",
      ok: false,
      detail: "unshare --user made a user namespace from inside",
    });
    const refused = { ...run, status: 1, stderr: "a first line\na second line\nunshare: unshare failed: Operation not permitted\n" };
    expect(userNamespaceCheck(refused)).toEqual({
      name: "user-namespaces",
      ok: true,
      detail: "a nested user namespace is refused inside (unshare --user: unshare: unshare failed: Operation not permitted)",
    });
    expect(userNamespaceCheck({ ...run, status: null, stderr: "", error: "ETIMEDOUT" }).detail).toBe(
      "a nested user namespace is refused inside (unshare --user: ETIMEDOUT)",
    );
    expect(userNamespaceCheck({ ...run, status: 1, stderr: "  \n" }).detail).toBe(
      "a nested user namespace is refused inside (unshare --user: exit 1)",
    );
  });

  it("limits: holds with no core, no file growth, 256 descriptors and a process limit in force", () => {
    const limits = { "Max core file size": 0, "Max file size": 0, "Max open files": 256, "Max processes": 16384 } as const;
    expect(limitsCheck(self({ limits }))).toEqual({
      name: "limits",
      ok: true,
      detail: "in force inside: core 0, file size 0, open files 256, processes 16384",
    });
    for (const [field, value] of [
      ["Max core file size", "unlimited"],
      ["Max file size", 1024],
      ["Max open files", 1024],
      ["Max processes", "unlimited"],
    ] as const)
      expect(limitsCheck(self({ limits: { ...limits, [field]: value } })), field).toMatchObject({ ok: false });
    expect(limitsCheck(null)).toEqual({
      name: "limits",
      ok: false,
      detail: "not all in force inside (prlimit missing?): core ?, file size ?, open files ?, processes ?",
    });
  });

  it("cgroup: holds when the process was in a cgroup of its own with both limits", () => {
    const support = cgroupSupport();
    if (!support.ok) throw new Error(support.reason);
    expect(cgroupCheck({ dirs: ["/x"], memoryBytes: 2560 * 1048576, processes: 128 })).toEqual({
      name: "cgroup",
      ok: true,
      detail: `cgroup v${support.version}, one per worker: memory 2560 MB, processes 128`,
    });
    expect(cgroupCheck({ dirs: ["/x"], processes: 128 })).toEqual({
      name: "cgroup",
      ok: false,
      detail: `cgroup v${support.version}, one per worker: memory ?, processes 128`,
    });
    expect(cgroupCheck({ dirs: ["/x"], memoryBytes: 1048576 })).toMatchObject({
      ok: false,
      detail: expect.stringContaining("processes ?"),
    });
    for (const measure of [undefined, { dirs: [] }])
      expect(cgroupCheck(measure)).toEqual({ name: "cgroup", ok: false, detail: "the walled process was not in a cgroup of its own" });
  });

  it("the host's measure of a process's cgroup: none for a process outside worker cgroups, nothing for one that is gone", () => {
    expect(measureCgroup(process.pid)).toEqual({ dirs: [] });
    expect(measureCgroup(GONE)).toBeUndefined();
  });

  it("cordons: the default cap of tenants per shared worker", () => {
    expect(cordonsCheck()).toEqual({
      name: "cordons",
      ok: true,
      detail: "a shared worker holds at most 64 tenants by default (maxTenantsPerWorker), all of one cordon (set per tenant)",
    });
  });
});
