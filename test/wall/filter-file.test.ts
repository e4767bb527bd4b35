import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { tmpdir } from "node:os";
import { filterFile } from "../../src/sandbox/wall/seccomp/filter-file.js";
import { compileFilter } from "../../src/sandbox/wall/seccomp/filter.js";
import { filterArch } from "../../src/sandbox/wall/seccomp/syscalls.js";

/*
 * The filter bwrap reads (docs/sandbox.md, "Syscall filter"): written once per host process to a file in a private
 * temp directory, each launch opening its own descriptor on it.
 */

describe("the syscall filter's file", () => {
  it("holds this host's program, once per process, readable by the host alone, in a directory of its own, removed at exit", () => {
    const arch = filterArch();
    expect(arch, "the suite runs on x86-64 or arm64").toBeDefined();
    const exitListeners = process.listeners("exit");
    const file = filterFile()!;
    const cleanup = process.listeners("exit").filter((listener) => !exitListeners.includes(listener));
    expect(file.arch).toBe(arch);
    expect(readFileSync(file.path).equals(compileFilter(arch!))).toBe(true);
    expect(statSync(file.path).mode & 0o777).toBe(0o400);
    expect(dirname(dirname(file.path))).toBe(tmpdir());
    expect(file.path).toMatch(/\/hookbox-seccomp-[^/]+\/filter\.bpf$/);
    expect(statSync(dirname(file.path)).mode & 0o777).toBe(0o700);
    expect(filterFile()).toBe(file);
    // When the host exits, the directory goes with it (run here by hand: this process goes on).
    expect(cleanup).toHaveLength(1);
    cleanup[0].call(process, 0);
    expect(existsSync(dirname(file.path))).toBe(false);
  });
});
