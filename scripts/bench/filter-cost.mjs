// What the wall's syscall filter costs a syscall: `node scripts/bench/filter-cost.mjs` (Linux x86-64 or arm64,
// bubblewrap and a C compiler) builds scripts/bench/native/syscall-cost.c and runs it four ways: as a plain
// process, inside bubblewrap without a filter, inside bubblewrap with the wall's filter (compiled from
// src/sandbox/wall/seccomp/filter.ts, as the host compiles it), and with a one-instruction filter that allows
// everything (what having any filter costs). Prints one JSON object, nanoseconds per call, each the minimum
// over batches (so a loaded machine moves it little).
import { execFileSync, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { importSource } from "./fixtures.mjs";

const root = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "hookbox-filter-cost-"));
try {
  const binary = join(dir, "syscall-cost");
  execFileSync("cc", ["-O2", "-o", binary, join(root, "scripts/bench/native/syscall-cost.c")], { stdio: "pipe" });

  // The filter module is TypeScript: bundle it on the fly, as the build would.
  const filter = await importSource(join(root, "src/sandbox/wall/seccomp/filter.ts"));
  const host = filter.hostFilter();
  if (host === undefined) throw new Error(`the wall has no syscall filter on ${process.arch}`);
  const wallFilter = join(dir, "wall.bpf");
  writeFileSync(wallFilter, host.program);
  // struct sock_filter { u16 code = BPF_RET|BPF_K; u8 jt; u8 jf; u32 k = SECCOMP_RET_ALLOW }
  const allowAll = join(dir, "allow.bpf");
  writeFileSync(allowAll, Buffer.from([0x06, 0, 0, 0, 0x00, 0x00, 0xff, 0x7f]));

  const bwrap = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net", "--die-with-parent"];
  const measure = (command, args, filterFile) => {
    const fd = filterFile === undefined ? undefined : openSync(filterFile, "r");
    try {
      const stdio = ["ignore", "pipe", "pipe", ...(fd === undefined ? [] : [fd])];
      const result = spawnSync(command, args, { stdio, encoding: "utf8" });
      if (result.status !== 0) throw new Error(`${command} ${args.join(" ")}: ${result.stderr || result.error}`);
      return JSON.parse(result.stdout);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  };
  console.log(
    JSON.stringify({
      filter_instructions: host.program.length / 8,
      plain: measure(binary, []),
      bwrap: measure("bwrap", [...bwrap, binary]),
      bwrap_wall_filter: measure("bwrap", [...bwrap, "--seccomp", "3", binary], wallFilter),
      bwrap_allow_all_filter: measure("bwrap", [...bwrap, "--seccomp", "3", binary], allowAll),
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
