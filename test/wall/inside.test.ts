import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, existsSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { plainLauncher } from "../../src/sandbox/wall/launcher.js";
import { runProbe } from "../../src/sandbox/wall/probe-run.js";
import type { ProbePlan, ProbeReport } from "../../src/sandbox/wall/probe-report.js";
import { repoRoot } from "../helpers/cli.js";
import { wallLauncher } from "../helpers/wall.js";

/*
 * From inside: the wall probe, started through the launcher the sandbox workers use, stands in for an
 * attacker who already runs code in a worker. With the workers' flags it is JavaScript that got into the
 * worker's Node realm; with bubblewrap alone (no permission model) it is native code that ignores Node's
 * permission checks. Both must fail to reach anything of the host.
 */

const SECRET_VALUE = `host-secret-${process.pid}-${Date.now()}`;
let dir: string;
let secretFile: string;
let server: Server;
let port: number;
let connections = 0;
let plan: ProbePlan;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "hookbox-wall-inside-"));
  chmodSync(dir, 0o777); // only the wall, not file modes, may keep the probe out
  secretFile = join(dir, "secret.txt");
  writeFileSync(secretFile, SECRET_VALUE, { mode: 0o644 });
  process.env.HOOKBOX_TEST_HOST_SECRET = SECRET_VALUE;
  server = createServer((socket) => {
    connections++;
    socket.on("error", () => undefined); // the probe hangs up at once
    socket.end("hello from the host");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
  plan = {
    // /dev/tty: no terminal to inject keystrokes into.
    reads: [secretFile, "/etc/shadow", join(repoRoot, "package.json"), "/dev/tty"],
    writes: [join(dir, "written"), "/tmp/written-by-probe", "/hookbox/written", "/hookbox/dist/sandbox-worker.js"],
    port,
    spawn: true,
  };
});

afterAll(async () => {
  delete process.env.HOOKBOX_TEST_HOST_SECRET;
  rmSync(dir, { recursive: true, force: true });
  rmSync("/tmp/written-by-probe", { force: true });
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function expectNothingReached(report: ProbeReport): void {
  for (const read of report.reads) expect(read, `read ${read.target}`).toMatchObject({ ok: false });
  for (const write of report.writes) expect(write, `write ${write.target}`).toMatchObject({ ok: false });
  expect(existsSync(join(dir, "written"))).toBe(false);
  expect(report.connect).toMatchObject({ ok: false });
  expect(connections).toBe(0);
  // Only what the launcher sets itself (bwrap adds PWD); no variable of the host's, the secret least of all.
  expect(report.env.filter((name) => !["LIBC", "PWD"].includes(name))).toEqual([]);
  expect(JSON.stringify(report)).not.toContain(SECRET_VALUE);
  expect(report.uid).not.toBe(0);
  if (process.getuid?.() === 0) expect([report.uid, report.gid]).toEqual([65534, 65534]);
}

describe("the second wall from inside", () => {
  it("as JavaScript in a worker (the workers' flags): no host file, no write, no host port, no process, no host variable", async () => {
    const report = await runProbe(wallLauncher(), plan);
    // The probe itself works: isolated-vm loads and runs under the same flags as the workers.
    expect(report.isolatedVm).toMatchObject({ loads: true });
    expect(report.permissionModel).toBe(true);
    expectNothingReached(report);
    expect(report.spawn).toMatchObject({ ok: false });
    expect(report.spawn!.error).toMatch(/ERR_ACCESS_DENIED/);
  });

  it("as native code that ignores Node's permission model (bubblewrap alone): still nothing of the host", async () => {
    const report = await runProbe(wallLauncher(), plan, { innerLayer: false });
    expect(report.permissionModel).toBe(false);
    expectNothingReached(report);
    // Not refused by Node here: the host file is not in its view; an inet socket is refused by the syscall filter
    // (and the port is not in its network anyway).
    expect(report.reads.map((read) => read.error?.split(":")[0])).toEqual(["ENOENT", "ENOENT", "ENOENT", "ENOENT"]);
    expect(report.connect!.error).toMatch(/^EPERM/);
    for (const name of ["pid", "net", "ipc", "uts", "cgroup", "mnt"]) {
      expect(report.namespaces[name], `${name} namespace`).not.toBeNull();
      expect(report.namespaces[name], `${name} namespace`).not.toBe(readlinkSync(`/proc/self/ns/${name}`));
    }
  });

  it("the same probe without the wall reaches all of it (the attempts above can succeed)", async () => {
    const report = await runProbe(plainLauncher(), { reads: [secretFile], writes: [join(dir, "written")], port, spawn: true });
    expect(report.reads[0]).toMatchObject({ ok: true, detail: SECRET_VALUE });
    expect(report.writes[0]).toMatchObject({ ok: true });
    expect(report.connect).toMatchObject({ ok: true });
    expect(report.spawn).toMatchObject({ ok: true });
    expect(report.env).toContain("HOOKBOX_TEST_HOST_SECRET");
    rmSync(join(dir, "written"));
    connections = 0;
  });
});
