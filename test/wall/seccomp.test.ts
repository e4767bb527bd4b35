import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { ARCHES, filterArch } from "../../src/sandbox/wall/seccomp/syscalls.js";
import { compileFilter, DENIED_SYSCALLS } from "../../src/sandbox/wall/seccomp/filter.js";

/*
 * The checked-in syscall tables against the kernel headers of this machine (linux-libc-dev: CI installs it
 * where missing), and the filter's coverage. What the filter does from inside is test/wall/native.test.ts.
 */

const HEADERS = {
  x86_64: ["/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"],
  aarch64: ["/usr/include/asm-generic/unistd.h"],
};

function headerNumbers(paths: string[]): Map<string, number> {
  const path = paths.find((candidate) => existsSync(candidate));
  if (path === undefined)
    throw new Error(`no kernel syscall header (${paths.join(", ")}): apt-get install linux-libc-dev (CI installs it)`);
  const numbers = new Map<string, number>();
  for (const match of readFileSync(path, "utf8").matchAll(/^#define __NR_(\w+)\s+(\d+)\s*$/gm)) numbers.set(match[1], Number(match[2]));
  return numbers;
}

describe("the syscall filter's tables", () => {
  for (const arch of ["x86_64", "aarch64"] as const) {
    it(`${arch}: every number is the kernel's`, () => {
      if (arch === "x86_64" && !HEADERS.x86_64.some((path) => existsSync(path))) {
        // Only an x86-64 machine has the x86-64 header; CI is one.
        expect(process.arch, "the x86-64 syscall header is missing on an x86-64 machine").not.toBe("x64");
        return;
      }
      const kernel = headerNumbers(HEADERS[arch]);
      for (const [name, number] of Object.entries(ARCHES[arch].syscalls)) expect(kernel.get(name), `${arch} ${name}`).toBe(number);
    });
  }

  it("names every denied syscall on both architectures (x86-only ones on x86-64 alone)", () => {
    const x86Only = ["iopl", "ioperm", "modify_ldt", "uselib"];
    for (const name of DENIED_SYSCALLS) {
      expect(ARCHES.x86_64.syscalls[name], `x86_64 ${name}`).toBeTypeOf("number");
      if (!x86Only.includes(name)) expect(ARCHES.aarch64.syscalls[name], `aarch64 ${name}`).toBeTypeOf("number");
    }
  });

  it("assembles for both architectures; other architectures get none", () => {
    for (const arch of ["x86_64", "aarch64"] as const) expect(compileFilter(arch).length % 8).toBe(0);
    expect(filterArch("x64")).toBe("x86_64");
    expect(filterArch("arm64")).toBe("aarch64");
    expect(filterArch("riscv64")).toBeUndefined();
    expect(filterArch("arm64", "BE")).toBeUndefined();
  });
});
