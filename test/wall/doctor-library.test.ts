import { describe, expect, it } from "vitest";
import { existsSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runDoctor, SUPPORTED_NODE_LINES, type DoctorReport } from "../../src/sandbox/wall/doctor-checks.js";
import { checkWall, hostWallTools, isWallMode, onPath, WALL_MODES, wallModeFlag, workerLauncher } from "../../src/sandbox/wall/mode.js";
import { FILTER_MODE } from "../../src/sandbox/wall/seccomp/filter.js";
import { wallMissing } from "../helpers/wall.js";

/*
 * `hookbox doctor` and the wall's mode through the library, in this process (doctor.test.ts and modes.test.ts drive
 * the CLI): every check's verdict and what it says, with the wall on and with it off (docs/sandbox.md, "Checking
 * it: `hookbox doctor`" and "`sandbox.wall`").
 */

const NAMESPACES = ["pid", "net", "ipc", "uts", "cgroup", "mnt"];

/** The doctor's bait directory, as its host-files check names the secret in it. */
function baitDir(report: DoctorReport): string {
  const secret = /(\/\S+)\/host-secret\.txt/.exec(detail(report, "host-files"))?.[1];
  expect(secret, "the bait's secret named").toBeDefined();
  return secret!;
}

function detail(report: DoctorReport, name: string): string {
  const check = report.checks.find((candidate) => candidate.name === name);
  expect(check, name).toBeDefined();
  return check!.detail;
}

describe("the doctor, through the library", () => {
  it("with the wall on, every check holds and says what it measured", async () => {
    const report = await runDoctor("auto");
    expect(report.wall, wallMissing(report.wallUnavailable ?? "")).toBe("bubblewrap");
    expect(report.checks.filter((check) => !check.ok)).toEqual([]);
    expect(report).toMatchObject({
      ok: true,
      mode: "auto",
      node: { version: process.versions.node, v8: process.versions.v8, supported: true },
      isolatedVm: { loads: true },
      env: ["LIBC", "PWD"],
    });
    expect(report).not.toHaveProperty("wallUnavailable");
    expect(SUPPORTED_NODE_LINES).toEqual([24, 26]);
    expect(detail(report, "node")).toBe(`Node ${process.versions.node} (V8 ${process.versions.v8}): a supported line (24, 26)`);
    expect(detail(report, "isolated-vm")).toMatch(/^isolated-vm \d+\.\d+\.\d+ loads and runs an isolate with the workers' flags$/);
    expect(detail(report, "wall")).toBe("bubblewrap with Node's permission model inside (--wall auto)");
    const root = process.getuid?.() === 0;
    if (root) expect(report.uid).toBe(65534);
    expect(report.uid).not.toBe(0);
    expect(detail(report, "uid")).toBe(`uid ${report.uid}, gid ${root ? 65534 : report.uid} inside`);
    expect(Object.keys(report.namespaces)).toEqual(NAMESPACES);
    for (const name of NAMESPACES) {
      expect(report.namespaces[name].host).toBe(readlinkSync(`/proc/self/ns/${name}`));
      expect(report.namespaces[name].inside, name).toMatch(new RegExp(`^${name}:\\[\\d+\\]$`));
      expect(report.namespaces[name].inside).not.toBe(report.namespaces[name].host);
    }
    expect(detail(report, "namespaces")).toBe("pid, net, ipc, uts, cgroup, mnt: all differ from the host's");
    expect(detail(report, "environment")).toBe("only the wall's own variables inside: LIBC, PWD");
    expect(detail(report, "host-loopback")).toMatch(
      /^a host loopback port out of reach, even without the permission model: 127\.0\.0\.1:\d+ \(E[A-Z]+\)$/,
    );
    expect(detail(report, "host-files")).toMatch(
      /^host files out of reach, even without the permission model: \/\S+\/host-secret\.txt \(ENOENT\), \/etc\/shadow \(ENOENT\), \/etc\/passwd \(ENOENT\)$/,
    );
    expect(detail(report, "writes")).toMatch(
      /^writing files out of reach, even without the permission model: \S+ \(E[A-Z]+\), \S+ \(E[A-Z]+\), \/hookbox\/written-by-probe \(E[A-Z]+\)$/,
    );
    expect(detail(report, "spawn")).toBe(
      "child processes refused by the permission model (ERR_ACCESS_DENIED); native code could start one, inside the same walls",
    );
    expect(detail(report, "syscall-filter")).toBe(
      `in force inside (Seccomp 2, ${process.arch === "arm64" ? "aarch64" : "x86_64"}): ${FILTER_MODE}`,
    );
    // Refused by the kernel (the filter's EPERM), not by a missing or broken unshare.
    expect(detail(report, "user-namespaces")).toBe(
      "a nested user namespace is refused inside (unshare --user: unshare: unshare failed: Operation not permitted)",
    );
    expect(detail(report, "limits")).toBe(`in force inside: core 0, file size 0, open files 256, processes ${root ? 16384 : 128}`);
    expect(detail(report, "cgroup")).toMatch(/^cgroup v[12], one per worker: memory 2560 MB, processes 128$/);
    // The bait is gone: its variable, its files, the file a write would have made in the host's temp directory.
    expect(process.env.HOOKBOX_DOCTOR_CANARY).toBeUndefined();
    expect(existsSync(baitDir(report))).toBe(false);
    expect(existsSync(join(tmpdir(), `hookbox-doctor-${process.pid}-written`))).toBe(false);
  });

  it("with the wall off, the checks that need it fail and say what was within reach", async () => {
    const report = await runDoctor("none");
    expect(report).toMatchObject({ ok: false, mode: "none", wall: "none" });
    const failed = report.checks.filter((check) => !check.ok).map((check) => check.name);
    // As root, the plain process is root too.
    const root = process.getuid?.() === 0;
    expect(failed).toEqual([
      "wall",
      ...(root ? ["uid"] : []),
      "namespaces",
      "environment",
      "host-loopback",
      "host-files",
      "writes",
      "spawn",
      "syscall-filter",
      "user-namespaces",
      "limits",
      "cgroup",
    ]);
    expect(detail(report, "wall")).toBe("off (--wall none)");
    expect(detail(report, "uid")).toBe(`uid ${process.getuid?.()}, gid ${process.getgid?.()} inside`);
    expect(detail(report, "namespaces")).toBe(`shared with the host: ${NAMESPACES.join(", ")}`);
    const leaked = report.env.filter((name) => !["LIBC", "PWD", "HOOKBOX_WORKER_POLL_US"].includes(name));
    expect(leaked).toContain("HOOKBOX_DOCTOR_CANARY");
    expect(detail(report, "environment")).toBe(`host variables visible inside: ${leaked.join(", ")}`);
    expect(detail(report, "host-loopback")).toMatch(/^a host loopback port within reach from inside: 127\.0\.0\.1:\d+$/);
    expect(detail(report, "host-files")).toMatch(
      /^host files within reach from inside: \/\S+\/host-secret\.txt, (\/etc\/shadow, )?\/etc\/passwd$/,
    );
    // The bait's own directory and the host's temp directory; /hookbox does not exist outside the wall.
    expect(detail(report, "writes")).toBe(
      `writing files within reach from inside: ${join(baitDir(report), "written-by-probe")}, ${join(tmpdir(), `hookbox-doctor-${process.pid}-written`)}`,
    );
    expect(detail(report, "spawn")).toBe("a child process can be started from inside");
    expect(detail(report, "user-namespaces")).toBe("not measured: util-linux's unshare is not installed here");
    expect(detail(report, "cgroup")).toBe("the walled process was not in a cgroup of its own");
    expect(process.env.HOOKBOX_DOCTOR_CANARY).toBeUndefined();
    expect(existsSync(baitDir(report))).toBe(false);
  });
});

describe("sandbox.wall", () => {
  it("the modes, and --wall's value checked", () => {
    expect(WALL_MODES).toEqual(["auto", "required", "none"]);
    for (const mode of WALL_MODES) expect(isWallMode(mode)).toBe(true);
    for (const value of ["", "Auto", "off", 1, undefined, null]) expect(isWallMode(value), String(value)).toBe(false);
    expect(wallModeFlag(undefined)).toBeUndefined();
    expect(wallModeFlag("required")).toBe("required");
    expect(() => wallModeFlag("sometimes")).toThrow(
      expect.objectContaining({ code: "USAGE", message: "--wall sometimes: expected one of auto, required, none" }),
    );
  });

  it("auto and required wall the workers where bubblewrap works (checked once); none leaves them plain", () => {
    const check = checkWall();
    expect(check.ok, check.ok ? "" : wallMissing(check.reason)).toBe(true);
    expect(checkWall()).toBe(check);
    expect(workerLauncher().wall).toBe("bubblewrap");
    expect(workerLauncher("required").wall).toBe("bubblewrap");
    expect(workerLauncher("auto")).toBe(workerLauncher("required"));
    expect(workerLauncher("none").wall).toBe("none");
  });

  it("the host's tools: bwrap from HOOKBOX_BWRAP or PATH, setpriv as root, prlimit and the filter where there are", () => {
    const saved = process.env.HOOKBOX_BWRAP;
    try {
      delete process.env.HOOKBOX_BWRAP;
      const tools = hostWallTools();
      expect(tools).not.toHaveProperty("reason");
      const root = process.getuid?.() === 0;
      expect(tools).toMatchObject({
        bwrap: onPath("bwrap"),
        hostIsRoot: root,
        prlimit: onPath("prlimit"),
        seccompFile: expect.stringMatching(/\/hookbox-seccomp-[^/]+\/filter\.bpf$/),
      });
      if (root) expect(tools).toMatchObject({ setpriv: onPath("setpriv") });
      else expect(tools).not.toHaveProperty("setpriv");
      process.env.HOOKBOX_BWRAP = onPath("bwrap");
      expect(hostWallTools()).toMatchObject({ bwrap: onPath("bwrap") });
      process.env.HOOKBOX_BWRAP = "/nonexistent/bwrap";
      expect(hostWallTools()).toEqual({ reason: "HOOKBOX_BWRAP=/nonexistent/bwrap is not an executable" });
      process.env.HOOKBOX_BWRAP = "/etc/passwd";
      expect(hostWallTools()).toEqual({ reason: "HOOKBOX_BWRAP=/etc/passwd is not an executable" });
    } finally {
      if (saved === undefined) delete process.env.HOOKBOX_BWRAP;
      else process.env.HOOKBOX_BWRAP = saved;
    }
  });

  it("a tool is looked for on PATH, then in the system directories; only absolute, executable paths", () => {
    const saved = process.env.PATH;
    try {
      process.env.PATH = "";
      expect(onPath("sh")).toMatch(/^\/(usr\/)?s?bin\/sh$/);
      process.env.PATH = "relative/dir:/nonexistent";
      expect(onPath("sh")).toMatch(/^\/(usr\/)?s?bin\/sh$/);
      expect(onPath("passwd-is-not-here")).toBeUndefined();
      process.env.PATH = "/etc";
      expect(onPath("passwd")).toBe("/usr/bin/passwd");
      // The system directories in order: /usr/sbin before /sbin.
      process.env.PATH = "";
      expect(onPath("ldconfig")).toBe("/usr/sbin/ldconfig");
      // A relative entry would resolve against the host's working directory: never taken.
      process.env.PATH = "node_modules/.bin";
      expect(onPath("vitest")).toBeUndefined();
      delete process.env.PATH;
      expect(onPath("sh")).toMatch(/^\/(usr\/)?s?bin\/sh$/);
    } finally {
      process.env.PATH = saved;
    }
  });
});
