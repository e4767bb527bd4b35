import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hostFilter } from "./filter.js";
import type { FilterArch } from "./syscalls.js";

/*
 * bwrap reads the filter from a descriptor, once per sandbox: the program is written once per host process
 * to a file in a directory only the host can enter, and each launch opens its own descriptor on it.
 */

export interface FilterFile {
  path: string;
  arch: FilterArch;
}

let written: FilterFile | null | undefined;

/** The filter file of this host, or undefined where the wall has no filter (see filter.ts). */
export function filterFile(): FilterFile | undefined {
  if (written === undefined) {
    const filter = hostFilter();
    if (filter === undefined) written = null;
    else {
      const dir = mkdtempSync(join(tmpdir(), "hookbox-seccomp-"));
      const path = join(dir, "filter.bpf");
      writeFileSync(path, filter.program, { mode: 0o400 });
      process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
      written = { path, arch: filter.arch };
    }
  }
  return written ?? undefined;
}
