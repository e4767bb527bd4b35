import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { wallMissing } from "../helpers/wall.js";
import type { DoctorReport } from "../../src/sandbox/wall/doctor-checks.js";

const CHECKS = [
  "node",
  "isolated-vm",
  "wall",
  "uid",
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
  "cordons",
];

describe("hookbox doctor", () => {
  it("--json: every check holds with the wall on; exit 0", async () => {
    const result = await runCli(["doctor", "--json"], { env: { HOOKBOX_TEST_SECRET: "doctor-secret" } });
    const report = JSON.parse(result.stdout) as DoctorReport;
    expect(report.wall, wallMissing(report.wallUnavailable ?? "")).toBe("bubblewrap");
    expect(report.checks.map((check) => check.name)).toEqual(CHECKS);
    expect(report.checks.filter((check) => !check.ok)).toEqual([]);
    expect(report).toMatchObject({ ok: true, mode: "auto", node: { supported: true }, isolatedVm: { loads: true } });
    expect(report.uid).not.toBe(0);
    expect(report.env).toEqual(["LIBC", "PWD"]);
    for (const [name, ns] of Object.entries(report.namespaces)) expect(ns.inside, name).not.toBe(ns.host);
    expect(result.stdout).not.toContain("doctor-secret");
    expect(result.code).toBe(0);
    // The wall in depth, measured on a walled process: the kernel's seccomp mode, a refused unshare, the rlimits, the cgroup.
    const detail = (name: string) => report.checks.find((check) => check.name === name)!.detail;
    expect(detail("syscall-filter")).toMatch(/^in force inside \(Seccomp 2, (x86_64|aarch64)\): denylist, EPERM/);
    expect(detail("user-namespaces")).toMatch(/refused inside \(unshare --user: .*Operation not permitted/);
    expect(detail("limits")).toMatch(/^in force inside: core 0, file size 0, open files 256, processes \d+$/);
    expect(detail("cgroup")).toMatch(/^cgroup v[12], one per worker: memory 2560 MB, processes 128$/);
    expect(detail("cordons")).toMatch(/at most 64 tenants/);
  });

  it("--wall none: the checks that need the wall fail; exit 1", async () => {
    const result = await runCli(["doctor", "--json", "--wall", "none"]);
    const report = JSON.parse(result.stdout) as DoctorReport;
    expect(report).toMatchObject({ ok: false, mode: "none", wall: "none" });
    const failed = report.checks.filter((check) => !check.ok).map((check) => check.name);
    expect(failed).toEqual(
      expect.arrayContaining([
        "wall",
        "namespaces",
        "environment",
        "host-loopback",
        "host-files",
        "writes",
        "spawn",
        "syscall-filter",
        "limits",
        "cgroup",
      ]),
    );
    expect(failed).not.toContain("node");
    expect(result.code).toBe(1);
  });

  it("without --json: one line per check, then the verdict", async () => {
    const result = await runCli(["doctor"]);
    const lines = result.stdout.trim().split("\n");
    expect(lines).toHaveLength(CHECKS.length + 1);
    CHECKS.forEach((name, i) => expect(lines[i]).toMatch(new RegExp(`^ok   ${name}: `)));
    expect(lines.at(-1)).toBe("every check holds");
    expect(result.code).toBe(0);
  });
});
