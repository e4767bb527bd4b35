import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { bubblewrapLauncher, plainLauncher, type BubblewrapTools, type LaunchRequest } from "../../src/sandbox/wall/launcher.js";
import { bwrapArgs, setprivArgs } from "../../src/sandbox/wall/bwrap-args.js";
import { cgroupSupport, isWorkerCgroupPath } from "../../src/sandbox/wall/cgroup.js";
import { measureCgroup } from "../../src/sandbox/wall/doctor-depth.js";
import { CLOSE_FDS_FLAG, inheritedFds } from "../../src/sandbox/wall/inherited-fds.js";
import { permissionFlags } from "../../src/sandbox/wall/inner-layer.js";
import { prlimitArgs, resourceLimits } from "../../src/sandbox/wall/limits.js";
import { onPath } from "../../src/sandbox/wall/mode.js";
import { wallView } from "../../src/sandbox/wall/view.js";
import { runProbe, runProbeSync } from "../../src/sandbox/wall/probe-run.js";
import { repoRoot } from "../helpers/cli.js";
import { programOf, waitUntil } from "../server/processes.js";

/*
 * The launcher's whole command line and what the started process gets (its descriptors, its environment, its
 * cgroup), with a stand-in for bwrap that reports them: each rule of docs/sandbox.md's "Second wall" that the
 * launcher holds, checked on a real child process in milliseconds. The real bwrap runs in inside.test.ts,
 * outside.test.ts, native.test.ts and worker-death.test.ts.
 */

let dir: string;
let fakeBwrap: string;
let filter: string;
const entry = join(repoRoot, "dist/wall-probe.js");
const runtime = join(repoRoot, "dist/runtime.js");
const setpriv = onPath("setpriv")!;
const prlimit = onPath("prlimit")!;
const WAIT = "hookbox-fake-bwrap-wait";
const EXEC_WAIT = "hookbox-fake-bwrap-exec-wait";
const REPORT = "hookbox-fake-bwrap-report";

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "hookbox-launcher-"));
  fakeBwrap = join(dir, "bwrap");
  // Reports what bwrap would get: its descriptors 3 and 4, its environment, its cgroups, then its arguments
  // (NUL-separated). Asked to wait, it starts a child and waits for it, as bwrap waits for Node.
  writeFileSync(
    fakeBwrap,
    [
      "#!/bin/sh",
      'echo "fd3=$(readlink /proc/self/fd/3)"',
      'echo "fd4=$(readlink /proc/self/fd/4)"',
      "echo \"env=$(env | grep -v '^PWD=' | tr '\\n' ' ')\"",
      "echo \"cgroup=$(tr '\\n' ' ' < /proc/self/cgroup)\"",
      'printf "args="; printf "%s\\0" "$@"; echo',
      // The probe's plan is one JSON argument: match within it.
      `for arg in "$@"; do case "$arg" in *${EXEC_WAIT}*) exec sleep 60 ;; *${WAIT}*) sleep 60 & wait ;; *${REPORT}*) echo '{"uid":4242}' ;; esac; done`,
      "printf 'an early line\\na second line\\na third line\\na complaint on stderr\\n' >&2",
    ].join("\n") + "\n",
  );
  chmodSync(fakeBwrap, 0o755);
  filter = join(dir, "filter.bpf");
  writeFileSync(filter, "a stand-in for the filter");
  process.env.HOOKBOX_TEST_LAUNCHER_CANARY = "a host variable";
});

afterAll(() => {
  delete process.env.HOOKBOX_TEST_LAUNCHER_CANARY;
  rmSync(dir, { recursive: true, force: true });
});

interface Reported {
  fd3: string;
  fd4: string;
  env: string;
  cgroupPaths: string[];
  args: string[];
}

function parse(stdout: string): Reported {
  const field = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(stdout)?.[1] ?? "";
  const args = stdout.slice(stdout.indexOf("\nargs=") + 6).replace(/\n$/, "");
  return {
    fd3: field("fd3"),
    fd4: field("fd4"),
    env: field("env").trim(),
    cgroupPaths: field("cgroup")
      .trim()
      .split(" ")
      .map((line) => line.split(":").slice(2).join(":")),
    args: args.split("\0").slice(0, -1),
  };
}

/** The directories of a worker cgroup the process was in (one per hierarchy), from its /proc/self/cgroup. */
function cgroupDirs(paths: string[]): string[] {
  const support = cgroupSupport();
  if (!support.ok) return [];
  const names = [...new Set(paths.filter(isWorkerCgroupPath).map((path) => basename(path)))];
  return support.hierarchies.flatMap((hierarchy) => names.map((name) => join(hierarchy.parent, name)));
}

/** The host's open descriptors. */
const openFds = () => readdirSync("/proc/self/fd").length;

const request: LaunchRequest = {
  entry,
  reads: [runtime],
  nodeArgs: ["--no-node-snapshot"],
  args: ["a plan with spaces", "second"],
  stdio: ["ignore", "pipe", "pipe"],
  env: { HOOKBOX_WORKER_POLL_US: "0" },
  resources: { memoryBytes: 300 * 1048576 },
};

describe("the bubblewrap launcher's command line", () => {
  it("root host: bwrap's arguments, then setpriv, prlimit for the shared uid, Node with the permission model, the entry inside, its arguments and the descriptors to close", () => {
    const tools: BubblewrapTools = { bwrap: fakeBwrap, hostIsRoot: true, setpriv, prlimit, seccompFile: filter };
    const before = openFds();
    const result = bubblewrapLauncher(tools).launchSync(request, { timeoutMs: 20_000 });
    expect(result.status, result.stderr).toBe(0);
    const reported = parse(result.stdout);
    const view = wallView({ files: [entry, runtime], setpriv, prlimit });
    const limits = resourceLimits({ memoryBytes: 300 * 1048576 });
    expect(reported.args).toEqual([
      ...bwrapArgs({ view, env: { LIBC: "glibc", HOOKBOX_WORKER_POLL_US: "0" }, hostIsRoot: true, seccompFd: 3 }),
      "/hookbox/bin/setpriv",
      ...setprivArgs(),
      "/hookbox/bin/prlimit",
      ...prlimitArgs(limits, { sharedUid: true }),
      "/hookbox/bin/node",
      ...permissionFlags(view.readable),
      "--no-node-snapshot",
      "/hookbox/dist/wall-probe.js",
      "a plan with spaces",
      "second",
      // Not the filter's descriptor: bwrap closes it, and Node takes the number for its event loop.
      ...(inheritedFds(4).length ? [`${CLOSE_FDS_FLAG}${inheritedFds(4).join(",")}`] : []),
    ]);
    // bwrap reads the filter from the descriptor it is told, right after the stdio; the host keeps no copy.
    expect(reported.fd3).toBe(filter);
    expect(openFds()).toBe(before);
    // bwrap itself gets no host variable.
    expect(reported.env).toBe("");
  });

  it("unprivileged host without prlimit or a filter: no setpriv, no prlimit, no --seccomp; the inner layer can be left off", () => {
    const tools: BubblewrapTools = { bwrap: fakeBwrap, hostIsRoot: false, setpriv };
    const plain: LaunchRequest = { entry, stdio: "pipe", innerLayer: false };
    const result = bubblewrapLauncher(tools).launchSync(plain, { timeoutMs: 20_000 });
    expect(result.status, result.stderr).toBe(0);
    const reported = parse(result.stdout);
    const view = wallView({ files: [entry] });
    const inherited = inheritedFds(3);
    expect(reported.args).toEqual([
      ...bwrapArgs({ view, env: { LIBC: "glibc" }, hostIsRoot: false }),
      "/hookbox/bin/node",
      "/hookbox/dist/wall-probe.js",
      ...(inherited.length ? [`${CLOSE_FDS_FLAG}${inherited.join(",")}`] : []),
    ]);
    expect(reported.fd3).toBe("");
    expect(reported.env).toBe("");
  });

  it("the filter's descriptor comes right after however many stdio entries the request has", () => {
    const tools: BubblewrapTools = { bwrap: fakeBwrap, hostIsRoot: false, prlimit, seccompFile: filter };
    const result = bubblewrapLauncher(tools).launchSync({ entry, stdio: ["ignore", "pipe", "pipe", "ignore"] }, { timeoutMs: 20_000 });
    const reported = parse(result.stdout);
    expect(reported.fd4).toBe(filter);
    expect(reported.args.slice(reported.args.indexOf("--seccomp"), reported.args.indexOf("--seccomp") + 2)).toEqual(["--seccomp", "4"]);
    expect(reported.args).toContain(`--nproc=128:128`);
    const inherited = inheritedFds(5);
    expect(reported.args.at(-1)).toBe(inherited.length ? `${CLOSE_FDS_FLAG}${inherited.join(",")}` : "/hookbox/dist/wall-probe.js");
    // As a string, the stdio is three entries: the filter is fd 3.
    const asString = parse(bubblewrapLauncher(tools).launchSync({ entry, stdio: "pipe" }, { timeoutMs: 20_000 }).stdout);
    expect(asString.fd3).toBe(filter);
  });
});

describe("the bubblewrap launcher's cgroup", () => {
  it("bwrap starts inside the worker's own cgroup, with the memory ceiling asked for and the process limit; the cgroup goes with the process", async () => {
    const support = cgroupSupport();
    const launcher = bubblewrapLauncher({ bwrap: fakeBwrap, hostIsRoot: true, setpriv, prlimit });
    const child = launcher.launch({ ...request, args: [WAIT] });
    const stdout = await readUntil(child, "\nargs=");
    const dirs = cgroupDirs(parse(stdout).cgroupPaths);
    try {
      if (!support.ok) {
        // No cgroup here: bwrap is started directly (the doctor's `cgroup` check fails on such a host).
        expect(dirs).toEqual([]);
        return;
      }
      expect(dirs.length).toBe(support.hierarchies.length);
      const measure = measureCgroup(child.pid!);
      expect(measure).toMatchObject({ memoryBytes: 300 * 1048576, processes: 128 });
      expect(measure!.dirs.sort()).toEqual([...dirs].sort());
      // The Node process the host means is the innermost one (here the stand-in's child), not bwrap.
      let inner = 0;
      await waitUntil(() => programOf((inner = launcher.nodePid(child)!)) === "sleep", 10_000, "the stand-in's child to start");
      expect(inner).not.toBe(child.pid);
      const closed = new Promise((resolve) => child.once("close", resolve));
      launcher.kill(child);
      await closed;
      expect(child.signalCode).toBe("SIGKILL");
      await waitUntil(() => !existsSync(`/proc/${inner}`), 10_000, "the inner process to be gone with it");
      await waitUntil(() => dirs.every((cgroup) => !existsSync(cgroup)), 10_000, "the worker's cgroup to be removed");
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });

  it("launchSync kills the process at its timeout and removes its cgroup once it is gone", async () => {
    const launcher = bubblewrapLauncher({ bwrap: fakeBwrap, hostIsRoot: true, setpriv });
    const before = openFds();
    // The timeout leaves the fake bwrap's few forks time to print its cgroups on a loaded machine.
    const result = launcher.launchSync({ entry, stdio: ["ignore", "pipe", "pipe"], args: [EXEC_WAIT] }, { timeoutMs: 3000 });
    expect(result.signal).toBe("SIGKILL");
    const dirs = cgroupDirs(parse(result.stdout).cgroupPaths);
    const support = cgroupSupport();
    expect(dirs.length).toBe(support.ok ? support.hierarchies.length : 0);
    await waitUntil(() => dirs.every((cgroup) => !existsSync(cgroup)), 10_000, "the cgroup to be removed");
    expect(openFds()).toBe(before);
  });

  it("a bwrap that cannot start: the launch fails (no hang), the cgroup is removed and no descriptor is left open", async () => {
    const launcher = bubblewrapLauncher({ bwrap: join(dir, "no-such-bwrap"), hostIsRoot: true, setpriv, seccompFile: filter });
    const before = openFds();
    const child = launcher.launch({ entry, stdio: "pipe" });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const outcome = await new Promise<string>((resolve) => {
      child.once("error", (error) => resolve(`error ${error.message}`));
      child.once("close", (code) => resolve(`exit ${code}`));
    });
    expect(outcome).toMatch(/^(exit [1-9]\d*|error .*ENOENT.*)$/);
    if (cgroupSupport().ok) expect(stderr).toContain("no-such-bwrap");
    expect(openFds()).toBe(before);
    await waitUntil(() => leftCgroups().length === 0, 10_000, "no worker cgroup of this process left");
  });
});

describe("the wall probe's run", () => {
  it("through the launcher, with the workers' Node flags and the plan as its one argument; its last stdout line is the report", async () => {
    const launcher = bubblewrapLauncher({ bwrap: fakeBwrap, hostIsRoot: false });
    const plan = { reads: [REPORT] };
    await expect(runProbe(launcher, plan)).resolves.toEqual({ uid: 4242 });
    expect(runProbeSync(launcher, plan)).toEqual({ uid: 4242 });
    // By default: the workers' permission model, nothing bound but the probe, its stdio three entries (the filter at fd 3).
    const filtered = bubblewrapLauncher({ bwrap: fakeBwrap, hostIsRoot: false, seccompFile: filter });
    let defaults = "";
    await runProbe(filtered, plan, { started: (child) => child.stdout!.on("data", (chunk: Buffer) => (defaults += chunk.toString())) });
    const reported = parse(defaults);
    expect(reported.fd3).toBe(filter);
    expect(reported.args).toContain("--permission");
    // (its bind's place and Node's entry)
    expect(reported.args.filter((arg) => arg.startsWith("/hookbox/dist/"))).toEqual([
      "/hookbox/dist/wall-probe.js",
      "/hookbox/dist/wall-probe.js",
    ]);
    let stdout = "";
    const seen = runProbe(launcher, plan, {
      innerLayer: false,
      binds: [runtime],
      started: (child) => child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString())),
    });
    await expect(seen).resolves.toEqual({ uid: 4242 });
    const args = parse(stdout).args;
    const inner = args.slice(args.lastIndexOf("/hookbox/bin/node"));
    expect(inner.slice(0, 4)).toEqual(["/hookbox/bin/node", "--no-node-snapshot", "/hookbox/dist/wall-probe.js", JSON.stringify(plan)]);
    expect(args).toContain("/hookbox/dist/runtime.js");
  });

  it("a probe that reports nothing fails naming how it ended and its last words; one that hangs is killed at its timeout", async () => {
    const launcher = bubblewrapLauncher({ bwrap: fakeBwrap, hostIsRoot: false });
    // Its last three lines on stderr, joined.
    const lastWords = /^the wall probe failed \(exit code 0\): a second line \| a third line \| a complaint on stderr$/;
    await expect(runProbe(launcher, {})).rejects.toThrow(lastWords);
    expect(() => runProbeSync(launcher, {})).toThrow(lastWords);
    // Nothing said at all: said so.
    const silent = bubblewrapLauncher({ bwrap: "/bin/true", hostIsRoot: false });
    await expect(runProbe(silent, {})).rejects.toThrow(/^the wall probe failed \(exit code 0\): no output$/);
    const started = Date.now();
    // As above: long enough for the fake bwrap's last words before the kill.
    await expect(runProbe(launcher, { reads: [EXEC_WAIT] }, { timeoutMs: 3000 })).rejects.toThrow(
      /^the wall probe failed \(killed by SIGKILL\): fd3=[^]*\S$/,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
    const missing = bubblewrapLauncher({ bwrap: join(dir, "no-such-bwrap"), hostIsRoot: false });
    await expect(runProbe(missing, {})).rejects.toThrow(/^the wall probe failed \((exit code [1-9]\d*|spawn .*ENOENT)\): /);
  });
});

describe("the wall probe's limits", () => {
  it("the probe runs with the resources asked for (its cgroup's memory ceiling)", async () => {
    const support = cgroupSupport();
    if (!support.ok) throw new Error(support.reason);
    const launcher = bubblewrapLauncher({ bwrap: fakeBwrap, hostIsRoot: false });
    let child: ChildProcess | undefined;
    const run = runProbe(
      launcher,
      { reads: [EXEC_WAIT] },
      { resources: { memoryBytes: 300 * 1048576 }, timeoutMs: 20_000, started: (started) => (child = started) },
    );
    let memoryBytes: number | undefined;
    await waitUntil(
      () => (memoryBytes = child?.pid === undefined ? undefined : measureCgroup(child.pid)?.memoryBytes) !== undefined,
      10_000,
      "the probe's cgroup",
    );
    expect(memoryBytes).toBe(300 * 1048576);
    launcher.kill(child!);
    await expect(run).rejects.toThrow(/killed by SIGKILL/);
  });

  it("the start-up check gives a probe that hangs 15 s, then fails naming the timeout", () => {
    const launcher = bubblewrapLauncher({ bwrap: fakeBwrap, hostIsRoot: false });
    expect(() => runProbeSync(launcher, { reads: [EXEC_WAIT] })).toThrow(/^the wall probe failed \(spawnSync \S+ ETIMEDOUT\): /);
  }, 60_000);

  it("a cgroup the kernel refuses fails the launch and leaves no descriptor open", () => {
    const launcher = bubblewrapLauncher({ bwrap: fakeBwrap, hostIsRoot: false, seccompFile: filter });
    const before = openFds();
    expect(() => launcher.launchSync({ entry, stdio: "pipe", resources: { memoryBytes: -5 } }, { timeoutMs: 20_000 })).toThrow(
      /^cannot set up the worker's cgroup: /,
    );
    expect(openFds()).toBe(before);
  });
});

describe("the plain launcher (no wall)", () => {
  it("runs Node directly with the host's environment and the request's, and kills it", async () => {
    const script = join(dir, "plain.mjs");
    writeFileSync(
      script,
      "process.stdout.write(JSON.stringify({ argv: process.argv.slice(2), execArgv: process.execArgv, canary: process.env.HOOKBOX_TEST_LAUNCHER_CANARY, asked: process.env.ASKED }));",
    );
    const launcher = plainLauncher();
    expect(launcher.wall).toBe("none");
    const result = launcher.launchSync(
      { entry: script, nodeArgs: ["--no-warnings"], args: ["one"], stdio: "pipe", env: { ASKED: "yes" } },
      { timeoutMs: 20_000 },
    );
    expect(JSON.parse(result.stdout)).toEqual({ argv: ["one"], execArgv: ["--no-warnings"], canary: "a host variable", asked: "yes" });
    const bare = launcher.launchSync({ entry: script, stdio: "pipe" }, { timeoutMs: 20_000 });
    expect(JSON.parse(bare.stdout)).toMatchObject({ argv: [], execArgv: [] });
    const waiting = join(dir, "wait.mjs");
    writeFileSync(waiting, "setInterval(() => {}, 1000);");
    const child = launcher.launch({ entry: waiting, stdio: "ignore" });
    expect(launcher.nodePid(child)).toBe(child.pid);
    const closed = new Promise((resolve) => child.once("close", resolve));
    launcher.kill(child);
    await closed;
    expect(child.signalCode).toBe("SIGKILL");
    launcher.kill(child); // a second kill of an ended child does nothing
  });
});

/** stdout of `child` up to and including the line that starts with `marker`. */
function readUntil(child: ChildProcess, marker: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const at = stdout.indexOf(marker);
      if (at >= 0 && stdout.indexOf("\n", at + 1) >= 0) resolve(stdout);
    });
    child.once("close", (code) => reject(new Error(`the stand-in ended (${code}) before reporting: ${stdout}`)));
  });
}

/** Worker cgroups named after this process that still exist. */
function leftCgroups(): string[] {
  const support = cgroupSupport();
  if (!support.ok) return [];
  return support.hierarchies.flatMap((hierarchy) =>
    readdirSync(hierarchy.parent).filter((name) => name.startsWith(`hookbox-${process.pid}-`) && isWorkerCgroupPath(`/${name}`)),
  );
}
