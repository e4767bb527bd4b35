import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ARCHES, type FilterArch } from "../../src/sandbox/wall/seccomp/syscalls.js";
import { CLONE_NAMESPACE_FLAGS, compileFilter, DENIED_SYSCALLS, hostFilter } from "../../src/sandbox/wall/seccomp/filter.js";
import { BpfProgram } from "../../src/sandbox/wall/seccomp/bpf.js";
import { propertyParameters } from "../helpers/property.js";

/*
 * The wall's syscall filter as the kernel runs it: the assembled program is executed here by a classic-BPF
 * interpreter written from the kernel's semantics (32-bit loads from struct seccomp_data, unsigned compares,
 * forward jumps, a return value), for every syscall the tables name and for any number at all. What the filter
 * does inside a real walled worker is test/wall/native.test.ts; this is every rule of it at every edge, in
 * milliseconds (and so what mutation testing of the wall's filter can run).
 */

const ALLOW = 0x7fff0000;
const EPERM = 0x00050000 | 1;
const ENOSYS = 0x00050000 | 38;

interface Call {
  arch: number;
  nr: number;
  args?: number[];
}

/** struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian). */
function seccompData(call: Call): Buffer {
  const data = Buffer.alloc(64);
  data.writeInt32LE(call.nr | 0, 0);
  data.writeUInt32LE(call.arch >>> 0, 4);
  (call.args ?? []).forEach((arg, index) => data.writeUInt32LE(arg >>> 0, 16 + 8 * index));
  return data;
}

/** Runs a classic-BPF seccomp program on one call, as the kernel would; returns the program's return value. */
function run(program: Buffer, call: Call): number {
  const data = seccompData(call);
  let accumulator = 0;
  for (let pc = 0; pc * 8 < program.length; pc++) {
    const at = pc * 8;
    const [code, jt, jf, k] = [
      program.readUInt16LE(at),
      program.readUInt8(at + 2),
      program.readUInt8(at + 3),
      program.readUInt32LE(at + 4),
    ];
    switch (code) {
      case 0x20: // BPF_LD | BPF_W | BPF_ABS
        accumulator = data.readUInt32LE(k);
        break;
      case 0x15: // BPF_JMP | BPF_JEQ | BPF_K
        pc += accumulator === k ? jt : jf;
        break;
      case 0x35: // BPF_JMP | BPF_JGE | BPF_K (unsigned)
        pc += accumulator >>> 0 >= k ? jt : jf;
        break;
      case 0x45: // BPF_JMP | BPF_JSET | BPF_K
        pc += (accumulator & k) !== 0 ? jt : jf;
        break;
      case 0x06: // BPF_RET | BPF_K
        return k;
      default:
        throw new Error(`instruction ${pc}: opcode 0x${code.toString(16)} is not one the filter uses`);
    }
  }
  throw new Error("the program ran off its end (the kernel refuses such a program)");
}

describe.each(["x86_64", "aarch64"] as FilterArch[])("the syscall filter on %s, run as the kernel runs it", (arch) => {
  const { auditArch, syscalls, foreignAbiFrom } = ARCHES[arch];
  const program = compileFilter(arch);
  const call = (name: string, args?: number[]) => run(program, { arch: auditArch, nr: syscalls[name]!, ...(args ? { args } : {}) });
  const special = new Set(["clone", "clone3", "socket", "socketpair", "personality"]);

  it("refuses every denied syscall the architecture has with EPERM", () => {
    for (const name of DENIED_SYSCALLS) if (name in syscalls) expect(call(name), name).toBe(EPERM);
  });

  it("allows every other syscall its table names", () => {
    for (const name of Object.keys(syscalls))
      if (!(DENIED_SYSCALLS as readonly string[]).includes(name) && !special.has(name)) expect(call(name), name).toBe(ALLOW);
  });

  it("clone: refused with any namespace flag, allowed without; clone3 answers ENOSYS", () => {
    for (let bit = 0; bit < 32; bit++) {
      const flag = (1 << bit) >>> 0;
      expect(call("clone", [flag]), `clone flag 0x${flag.toString(16)}`).toBe((CLONE_NAMESPACE_FLAGS & flag) !== 0 ? EPERM : ALLOW);
    }
    expect(call("clone", [0x01200011])).toBe(ALLOW); // what fork() passes: CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
    expect(call("clone", [0x003d0f00])).toBe(ALLOW); // what a thread's clone passes
    expect(call("clone3")).toBe(ENOSYS);
  });

  it("socket and socketpair: AF_UNIX only", () => {
    for (const name of ["socket", "socketpair"]) {
      expect(call(name, [1]), `${name} AF_UNIX`).toBe(ALLOW);
      for (const family of [0, 2, 10, 16, 17, 38]) expect(call(name, [family]), `${name} family ${family}`).toBe(EPERM);
    }
  });

  it("personality: the query only", () => {
    expect(call("personality", [0xffffffff])).toBe(ALLOW);
    for (const persona of [0, 0x0008, 0x0040000, 0xfffffffe]) expect(call("personality", [persona])).toBe(EPERM);
  });

  it("refuses a call of another architecture (or ABI) whatever its number", () => {
    for (const other of [0x40000003 /* i386 */, 0xc000003e, 0xc00000b7, 0x40000028 /* arm */, 0]) {
      if (other === auditArch) continue;
      expect(run(program, { arch: other, nr: 0 }), `arch 0x${other.toString(16)}`).toBe(EPERM);
    }
    if (foreignAbiFrom !== undefined) {
      // x32's numbers on x86-64 carry bit 30: the same kernel entry under another numbering.
      expect(run(program, { arch: auditArch, nr: foreignAbiFrom | 39 /* getpid */ })).toBe(EPERM);
      expect(run(program, { arch: auditArch, nr: foreignAbiFrom - 1 })).toBe(ALLOW);
    }
  });

  it("any other number is allowed, and only those (property)", () => {
    const denied = new Set<number>(DENIED_SYSCALLS.flatMap((name) => (name in syscalls ? [syscalls[name]!] : [])));
    const specials = new Set([...special].map((name) => syscalls[name]!));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: (foreignAbiFrom ?? 0x80000000) - 1 }), fc.nat(), (nr, arg) => {
        if (specials.has(nr)) return;
        expect(run(program, { arch: auditArch, nr, args: [arg] })).toBe(denied.has(nr) ? EPERM : ALLOW);
      }),
      propertyParameters(200),
    );
  });
});

describe("the host's filter", () => {
  it("is its architecture's: x86-64 or arm64 (the machines the suite runs on), refusing unshare there", () => {
    const arch = ({ x64: "x86_64", arm64: "aarch64" } as const)[process.arch as "x64" | "arm64"];
    expect(arch, `the suite runs on x86-64 or arm64, not ${process.arch}`).toBeDefined();
    const filter = hostFilter();
    expect(filter?.arch).toBe(arch);
    expect(run(filter!.program, { arch: ARCHES[arch].auditArch, nr: ARCHES[arch].syscalls.unshare! })).toBe(EPERM);
  });
});

describe("the BPF assembler", () => {
  it("encodes forward jumps by label and refuses what it cannot encode", () => {
    const jumps = new BpfProgram().load(0).jeq(7, "seven", "other").label("seven").ret(1).label("other").ret(2).assemble();
    expect(run(jumps, { arch: 0, nr: 7 })).toBe(1);
    expect(run(jumps, { arch: 0, nr: 8 })).toBe(2);
    expect(() => new BpfProgram().jeq(1, "nowhere").ret(0).assemble()).toThrow("BPF label nowhere is not defined");
    expect(() => new BpfProgram().label("twice").ret(0).label("twice").ret(1).assemble()).toThrow("BPF label twice defined twice");
    expect(() => new BpfProgram().label("back").ret(0).jeq(1, "back").ret(1).assemble()).toThrow("BPF jump to back is out of range (-2)");
    const far = new BpfProgram().load(0).jeq(1, "far");
    for (let i = 0; i < 255; i++) far.ret(i);
    expect(() => far.label("far").ret(0).assemble()).not.toThrow();
    const tooFar = new BpfProgram().load(0).jeq(1, "far");
    for (let i = 0; i < 256; i++) tooFar.ret(i);
    expect(() => tooFar.label("far").ret(0).assemble()).toThrow("BPF jump to far is out of range (256)");
  });
});
