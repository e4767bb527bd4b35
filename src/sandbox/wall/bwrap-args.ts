import { dirname } from "node:path";
import type { WallView } from "./view.js";

/*
 * The bubblewrap command line around one Node process (docs/sandbox.md, "Second wall"). Every namespace
 * but the user namespace is new: no network (its own loopback only), no view of the host's processes,
 * IPC or hostname. The filesystem is an empty read-only root holding only the view's binds, a fresh /proc,
 * a /dev of five harmless devices and an empty read-only /tmp. No variable of the host's environment gets
 * through.
 *
 * No terminal is reachable either: no tty device exists inside and the worker's stdio are /dev/null and
 * pipes, so there is nothing to inject keystrokes into (what bwrap's --new-session guards against). A new
 * session is not used for that: on Linux with autogroup scheduling, each session is a scheduling group of
 * its own, and a worker in one measured 2-4x slower tenant loads and first calls on a busy host (see
 * docs/sandbox.md).
 */

/** The devices a worker may open (writes to null, reads of zero and randomness). */
const DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/** The unprivileged user and group the process runs as when the host runs as root. */
export const NOBODY = 65534;

export interface BwrapOptions {
  view: WallView;
  /** Variables the process needs (everything else is cleared). */
  env: Record<string, string>;
  /**
   * The host runs as root: bwrap then makes no user namespace (which would map the sandbox's uid back to
   * root on the host) and setpriv drops to NOBODY, with no capabilities, before Node starts.
   */
  hostIsRoot: boolean;
  /** The descriptor bwrap reads the syscall filter from (seccomp/filter.ts); none where the wall has no filter. */
  seccompFd?: number;
}

export function bwrapArgs(options: BwrapOptions): string[] {
  const args = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup"];
  // As another user, bwrap needs a user namespace to do the rest, and keeps the sandbox from making more.
  if (!options.hostIsRoot) args.push("--unshare-user", "--disable-userns");
  args.push("--die-with-parent", "--hostname", "sandbox", "--cap-drop", "ALL");
  // setpriv needs these to drop the uid, the groups and the bounding set; it drops them all before Node runs.
  if (options.hostIsRoot) args.push("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP");
  // Directories bwrap creates for binds are 0700 when it runs as root: create them readable first.
  for (const dir of parentDirs(options.view.binds.map((bind) => bind.dest))) args.push("--perms", "0755", "--dir", dir);
  for (const bind of options.view.binds) args.push("--ro-bind", bind.source, bind.dest);
  args.push("--proc", "/proc", "--tmpfs", "/dev");
  for (const device of DEVICES) args.push("--dev-bind", device, device);
  args.push("--tmpfs", "/tmp", "--remount-ro", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/");
  args.push("--chdir", "/", "--clearenv");
  // Installed last, just before the command runs: it holds for setpriv, prlimit, Node and all they start.
  if (options.seccompFd !== undefined) args.push("--seccomp", String(options.seccompFd));
  for (const [name, value] of Object.entries(options.env)) args.push("--setenv", name, value);
  return args;
}

/** setpriv's arguments before the command: the unprivileged user, no groups, no capabilities at all, no new privileges. */
export function setprivArgs(): string[] {
  return [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"];
}

/** Every ancestor directory of `paths`, parents first, without duplicates. */
function parentDirs(paths: string[]): string[] {
  const dirs = new Set<string>();
  for (const path of paths) {
    const chain: string[] = [];
    for (let dir = dirname(path); dir !== "/" && !dirs.has(dir); dir = dirname(dir)) chain.unshift(dir);
    for (const dir of chain) dirs.add(dir);
  }
  return [...dirs];
}
