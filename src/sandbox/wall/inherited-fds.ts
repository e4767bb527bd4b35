import { closeSync, readdirSync, readFileSync } from "node:fs";

/*
 * A child process gets every descriptor its parent holds without close-on-exec, not only its stdio: Node
 * closes none of them, and neither does bwrap. Whatever the host inherited that way from its own parent (a
 * log file, a socket of its supervisor, a pipe) would reach into the wall. The host names them on the
 * command line and the walled process closes them before anything else runs.
 */

export const CLOSE_FDS_FLAG = "--hookbox-close-fds=";

/**
 * The descriptors at or above `from` that a child would inherit (no O_CLOEXEC): the host's own, or those of
 * process `pid` (how a test shows it on a process whose descriptors it arranged).
 */
export function inheritedFds(from: number, pid: number | "self" = "self"): number[] {
  let entries: string[];
  try {
    entries = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  const inherited: number[] = [];
  for (const entry of entries) {
    const fd = Number(entry);
    if (fd < from) continue;
    try {
      const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8"))?.[1];
      if (flags !== undefined && (parseInt(flags, 8) & 0o2000000) === 0) inherited.push(fd);
    } catch {
      // closed meanwhile (the directory listing's own descriptor, for one)
    }
  }
  return inherited;
}

/** Inside: closes the descriptors the host named (a no-op when it named none). */
export function closeInheritedFds(argv: string[] = process.argv): void {
  const flag = argv.find((arg) => arg.startsWith(CLOSE_FDS_FLAG));
  if (flag === undefined) return;
  for (const fd of flag.slice(CLOSE_FDS_FLAG.length).split(",").filter(Boolean).map(Number)) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}
