import { chmodSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { plainLauncher, type Launcher, type WallKind } from "./launcher.js";
import { checkWall, type WallMode } from "./mode.js";
import { NOBODY } from "./bwrap-args.js";
import { runProbe } from "./probe-run.js";
import type { Attempt, ProbeReport } from "./probe-report.js";
import type { ChildProcess } from "node:child_process";
import {
  cgroupCheck,
  cordonsCheck,
  filterCheck,
  limitsCheck,
  measureCgroup,
  userNamespaceCheck,
  type CgroupMeasure,
  type DoctorCheck,
} from "./doctor-depth.js";
import { onPath } from "./mode.js";

/*
 * `hookbox doctor`: what the second wall holds on this host, measured by the wall probe started through the
 * same launcher as the sandbox workers. The probe runs twice: with the workers' flags, and with bubblewrap
 * alone (no permission model), which is what native code that escaped V8 would face.
 */

export const SUPPORTED_NODE_LINES = [24, 26];

/** The variables the launcher itself puts inside the wall (wall/launcher.ts, view.ts); bwrap adds PWD. */
const WALL_VARIABLES = new Set(["PWD", "LIBC", "HOOKBOX_WORKER_POLL_US"]);
const CANARY = "HOOKBOX_DOCTOR_CANARY";
const NAMESPACES = ["pid", "net", "ipc", "uts", "cgroup", "mnt"];

export type { DoctorCheck };

export interface DoctorReport {
  ok: boolean;
  mode: WallMode;
  wall: WallKind;
  /** Why the wall is not in effect, when it is not. */
  wallUnavailable?: string;
  node: { version: string; v8: string; supported: boolean };
  isolatedVm: { version?: string; loads: boolean; error?: string };
  uid: number;
  namespaces: Record<string, { host: string; inside: string | null }>;
  env: string[];
  checks: DoctorCheck[];
}

export async function runDoctor(mode: WallMode): Promise<DoctorReport> {
  let launcher: Launcher = plainLauncher();
  let wallUnavailable: string | undefined;
  if (mode !== "none") {
    const check = checkWall();
    if (check.ok) launcher = check.launcher;
    else wallUnavailable = check.reason;
  }
  const bait = await Bait.set();
  try {
    const plan = { reads: bait.reads, writes: bait.writes, port: bait.port, spawn: true };
    const asWorker = await runProbe(launcher, plan);
    // As native code: try a user namespace with util-linux's unshare, and let the host look at the process's cgroup.
    const unshare = launcher.wall === "bubblewrap" ? onPath("unshare") : undefined;
    const natives = unshare ? [{ path: "/hookbox/dist/unshare", args: ["--user", "/hookbox/bin/node", "--version"] }] : [];
    let cgroup: CgroupMeasure | undefined;
    const outerOnly = await runProbe(
      launcher,
      { ...plan, natives, pauseMs: 300 },
      {
        innerLayer: false,
        binds: unshare ? [unshare] : [],
        started: (child) => void watchCgroup(launcher, child).then((measure) => (cgroup = measure)),
      },
    );
    const depth = [
      filterCheck(outerOnly.self),
      userNamespaceCheck(outerOnly.natives?.[0]),
      limitsCheck(outerOnly.self),
      cgroupCheck(cgroup),
      cordonsCheck(),
    ];
    return report({ mode, launcher, wallUnavailable, asWorker, outerOnly, bait, depth });
  } finally {
    await bait.remove();
  }
}

interface Findings {
  mode: WallMode;
  launcher: Launcher;
  wallUnavailable: string | undefined;
  asWorker: ProbeReport;
  outerOnly: ProbeReport;
  bait: Bait;
  /** The wall in depth (doctor-depth.ts). */
  depth: DoctorCheck[];
}

function report(findings: Findings): DoctorReport {
  const { asWorker, outerOnly, launcher } = findings;
  const major = Number(asWorker.node.split(".")[0]);
  const supported = SUPPORTED_NODE_LINES.includes(major);
  const namespaces: DoctorReport["namespaces"] = {};
  for (const name of NAMESPACES) namespaces[name] = { host: readlinkSync(`/proc/self/ns/${name}`), inside: outerOnly.namespaces[name] };
  const shared = NAMESPACES.filter((name) => namespaces[name].inside === null || namespaces[name].inside === namespaces[name].host);
  const leaked = asWorker.env.filter((name) => !WALL_VARIABLES.has(name));
  const checks: DoctorCheck[] = [
    {
      name: "node",
      ok: supported,
      detail: `Node ${asWorker.node} (V8 ${asWorker.v8}): ${supported ? "a supported line" : "not a supported line"} (${SUPPORTED_NODE_LINES.join(", ")})`,
    },
    {
      name: "isolated-vm",
      ok: asWorker.isolatedVm.loads,
      detail: asWorker.isolatedVm.loads
        ? `isolated-vm ${asWorker.isolatedVm.version} loads and runs an isolate with the workers' flags`
        : `isolated-vm does not load with the workers' flags: ${asWorker.isolatedVm.error}`,
    },
    {
      name: "wall",
      ok: launcher.wall === "bubblewrap",
      detail:
        launcher.wall === "bubblewrap"
          ? `bubblewrap with Node's permission model inside (--wall ${findings.mode})`
          : findings.mode === "none"
            ? "off (--wall none)"
            : `off: ${findings.wallUnavailable}`,
    },
    {
      name: "uid",
      ok: asWorker.uid !== 0 && (process.getuid?.() !== 0 || asWorker.uid === NOBODY),
      detail: `uid ${asWorker.uid}, gid ${asWorker.gid} inside`,
    },
    {
      name: "namespaces",
      ok: shared.length === 0,
      detail: shared.length === 0 ? `${NAMESPACES.join(", ")}: all differ from the host's` : `shared with the host: ${shared.join(", ")}`,
    },
    {
      name: "environment",
      ok: leaked.length === 0,
      detail: leaked.length
        ? `host variables visible inside: ${leaked.join(", ")}`
        : `only the wall's own variables inside: ${asWorker.env.join(", ") || "(none)"}`,
    },
    attemptsCheck("host-loopback", "a host loopback port", [asWorker.connect!], [outerOnly.connect!]),
    attemptsCheck("host-files", "host files", asWorker.reads, outerOnly.reads),
    attemptsCheck("writes", "writing files", asWorker.writes, outerOnly.writes),
    spawnCheck(asWorker.spawn!, outerOnly.spawn!),
    ...findings.depth,
  ];
  return {
    ok: checks.every((check) => check.ok),
    mode: findings.mode,
    wall: launcher.wall,
    ...(findings.wallUnavailable !== undefined ? { wallUnavailable: findings.wallUnavailable } : {}),
    node: { version: asWorker.node, v8: asWorker.v8, supported },
    isolatedVm: asWorker.isolatedVm,
    uid: asWorker.uid,
    namespaces,
    env: asWorker.env,
    checks,
  };
}

/** The cgroup of the walled Node process `child` runs, read from the host once that process is there. */
async function watchCgroup(launcher: Launcher, child: ChildProcess): Promise<CgroupMeasure | undefined> {
  for (let waited = 0; waited < 3000 && child.exitCode === null; waited += 20) {
    const pid = launcher.nodePid(child);
    if (pid !== undefined && pid !== child.pid) {
      const measure = measureCgroup(pid);
      if (measure?.dirs.length) return measure;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return undefined;
}

/** Holds when every attempt failed both with the workers' flags and with bubblewrap alone. */
function attemptsCheck(name: string, what: string, asWorker: Attempt[], outerOnly: Attempt[]): DoctorCheck {
  const worked = [...asWorker, ...outerOnly].filter((attempt) => attempt.ok).map((attempt) => attempt.target);
  if (worked.length) return { name, ok: false, detail: `${what} within reach from inside: ${[...new Set(worked)].join(", ")}` };
  const outer = outerOnly.map((attempt) => `${attempt.target} (${errorCode(attempt)})`).join(", ");
  return { name, ok: true, detail: `${what} out of reach, even without the permission model: ${outer}` };
}

/** Holds when the workers' flags refuse it; bubblewrap alone lets native code start processes, inside the same walls. */
function spawnCheck(asWorker: Attempt, outerOnly: Attempt): DoctorCheck {
  if (asWorker.ok) return { name: "spawn", ok: false, detail: "a child process can be started from inside" };
  const outer = outerOnly.ok ? "native code could start one, inside the same walls" : `also refused without it (${errorCode(outerOnly)})`;
  return { name: "spawn", ok: true, detail: `child processes refused by the permission model (${errorCode(asWorker)}); ${outer}` };
}

/** `ENOENT` of "ENOENT: no such file or directory, open ...". */
function errorCode(attempt: Attempt): string {
  return (attempt.error ?? "").split(":")[0];
}

/** What the probe reaches for: a secret file, places to write, a listening loopback port, a secret variable. */
class Bait {
  private constructor(
    private readonly dir: string,
    private readonly server: Server,
    readonly port: number,
    readonly reads: string[],
    readonly writes: string[],
  ) {}

  static async set(): Promise<Bait> {
    const dir = mkdtempSync(join(tmpdir(), "hookbox-doctor-"));
    chmodSync(dir, 0o777); // so only the wall, not file modes, keeps the probe out
    const secret = join(dir, "host-secret.txt");
    writeFileSync(secret, "a host secret", { mode: 0o644 });
    process.env[CANARY] = randomBytes(8).toString("hex");
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const writes = [join(dir, "written-by-probe"), join(tmpdir(), `hookbox-doctor-${process.pid}-written`), "/hookbox/written-by-probe"];
    return new Bait(dir, server, port, [secret, "/etc/shadow", "/etc/passwd"], writes);
  }

  async remove(): Promise<void> {
    delete process.env[CANARY];
    rmSync(this.dir, { recursive: true, force: true });
    rmSync(this.writes[1], { force: true });
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
