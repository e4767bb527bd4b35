import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { HookboxError } from "../../errors.js";
import { bubblewrapLauncher, plainLauncher, type BubblewrapTools, type Launcher } from "./launcher.js";
import { NOBODY } from "./bwrap-args.js";
import { runProbeSync } from "./probe-run.js";
import { filterFile } from "./seccomp/filter-file.js";

/**
 * `sandbox.wall`: `auto` (default) walls the workers when bubblewrap works here and warns once on stderr
 * when it does not; `required` refuses to start without the wall; `none` opts out.
 */
export type WallMode = "auto" | "required" | "none";
export const WALL_MODES: readonly WallMode[] = ["auto", "required", "none"];

export function isWallMode(value: unknown): value is WallMode {
  return typeof value === "string" && (WALL_MODES as readonly string[]).includes(value);
}

/** Whether the wall works on this host: checked once per process, by a probe started through the wall. */
export type WallCheck = { ok: true; launcher: Launcher } | { ok: false; reason: string };

let checked: WallCheck | undefined;
let warned = false;

export function checkWall(): WallCheck {
  checked ??= probeWall();
  return checked;
}

/** The launcher for sandbox workers under `mode` (throws WALL_UNAVAILABLE for `required` without the wall). */
export function workerLauncher(mode: WallMode = "auto"): Launcher {
  if (mode === "none") return plainLauncher();
  const check = checkWall();
  if (check.ok) return check.launcher;
  if (mode === "required")
    throw new HookboxError("WALL_UNAVAILABLE", `sandbox.wall is "required" but the second wall cannot start here: ${check.reason}`, {
      reason: check.reason,
    });
  if (!warned) {
    warned = true;
    process.stderr.write(
      `hookbox: warning: sandbox workers run without the second wall (${check.reason}); ` +
        `install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or pass --wall none to opt out knowingly\n`,
    );
  }
  return plainLauncher();
}

/** What the wall needs on this host (bwrap; setpriv as root; prlimit and the filter where there are), or why it cannot be had. */
export function hostWallTools(): BubblewrapTools | { reason: string } {
  if (process.platform !== "linux") return { reason: `bubblewrap needs Linux (this is ${process.platform})` };
  // HOOKBOX_BWRAP: where bwrap is, when it is not on PATH.
  const given = process.env.HOOKBOX_BWRAP;
  const bwrap = given ? (isExecutable(given) ? given : undefined) : onPath("bwrap");
  if (bwrap === undefined) return { reason: given ? `HOOKBOX_BWRAP=${given} is not an executable` : "bwrap is not installed" };
  const hostIsRoot = process.getuid?.() === 0;
  const setpriv = hostIsRoot ? onPath("setpriv") : undefined;
  if (hostIsRoot && setpriv === undefined)
    return { reason: "the host runs as root and setpriv (util-linux) is not installed to drop to an unprivileged user" };
  const prlimit = onPath("prlimit");
  const filter = filterFile();
  return {
    bwrap,
    hostIsRoot,
    ...(setpriv ? { setpriv } : {}),
    ...(prlimit ? { prlimit } : {}),
    ...(filter ? { seccompFile: filter.path } : {}),
  };
}

function probeWall(): WallCheck {
  const tools = hostWallTools();
  if ("reason" in tools) return { ok: false, reason: tools.reason };
  const { hostIsRoot } = tools;
  const launcher = bubblewrapLauncher(tools);
  try {
    const report = runProbeSync(launcher);
    if (!report.isolatedVm.loads) return { ok: false, reason: `isolated-vm does not load inside the wall: ${report.isolatedVm.error}` };
    if (hostIsRoot && report.uid !== NOBODY) return { ok: false, reason: `the probe ran as uid ${report.uid}, not ${NOBODY}` };
    return { ok: true, launcher };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}

/** `name` on PATH or in the usual system directories. */
export function onPath(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/bin", "/bin", "/usr/sbin", "/sbin"];
  return dirs.map((dir) => join(dir, name)).find((candidate) => candidate.startsWith("/") && isExecutable(candidate));
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `--wall VALUE` of the CLI commands (undefined when absent). */
export function wallModeFlag(value: string | undefined): WallMode | undefined {
  if (value === undefined || isWallMode(value)) return value;
  throw new HookboxError("USAGE", `--wall ${value}: expected one of ${WALL_MODES.join(", ")}`);
}
