import { endianness } from "node:os";

/*
 * The syscall numbers the wall's filter names, for the two architectures it covers. They are the kernel's
 * own (arch/x86/entry/syscalls/syscall_64.tbl; include/uapi/asm-generic/unistd.h for arm64), checked in so a
 * fresh machine needs neither a compiler nor libseccomp; test/wall/seccomp.test.ts compares them with the
 * kernel headers of the machine it runs on.
 */

export type FilterArch = "x86_64" | "aarch64";

/** A syscall an architecture lacks (arm64 has no iopl, for one) is absent from its table. */
export type SyscallTable = Readonly<Record<string, number>>;

const X86_64: SyscallTable = {
  // namespaces and processes
  clone: 56,
  clone3: 435,
  unshare: 272,
  setns: 308,
  ptrace: 101,
  process_vm_readv: 310,
  process_vm_writev: 311,
  process_madvise: 440,
  pidfd_getfd: 438,
  kcmp: 312,
  personality: 135,
  // keys, kernel programs, kernel interfaces that have carried escapes
  keyctl: 250,
  add_key: 248,
  request_key: 249,
  bpf: 321,
  perf_event_open: 298,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  fanotify_init: 300,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  lookup_dcookie: 212,
  // mounts
  mount: 165,
  umount2: 166,
  pivot_root: 155,
  chroot: 161,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  move_mount: 429,
  open_tree: 428,
  mount_setattr: 442,
  // the machine's own state
  kexec_load: 246,
  kexec_file_load: 320,
  init_module: 175,
  finit_module: 313,
  delete_module: 176,
  acct: 163,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  syslog: 103,
  vhangup: 153,
  settimeofday: 164,
  clock_settime: 227,
  clock_adjtime: 305,
  adjtimex: 159,
  sethostname: 170,
  setdomainname: 171,
  quotactl: 179,
  quotactl_fd: 443,
  // x86 only
  iopl: 172,
  ioperm: 173,
  modify_ldt: 154,
  uselib: 134,
  // sockets
  socket: 41,
  socketpair: 53,
};

const AARCH64: SyscallTable = {
  clone: 220,
  clone3: 435,
  unshare: 97,
  setns: 268,
  ptrace: 117,
  process_vm_readv: 270,
  process_vm_writev: 271,
  process_madvise: 440,
  pidfd_getfd: 438,
  kcmp: 272,
  personality: 92,
  keyctl: 219,
  add_key: 217,
  request_key: 218,
  bpf: 280,
  perf_event_open: 241,
  userfaultfd: 282,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  fanotify_init: 262,
  name_to_handle_at: 264,
  open_by_handle_at: 265,
  lookup_dcookie: 18,
  mount: 40,
  umount2: 39,
  pivot_root: 41,
  chroot: 51,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  move_mount: 429,
  open_tree: 428,
  mount_setattr: 442,
  kexec_load: 104,
  kexec_file_load: 294,
  init_module: 105,
  finit_module: 273,
  delete_module: 106,
  acct: 89,
  swapon: 224,
  swapoff: 225,
  reboot: 142,
  syslog: 116,
  vhangup: 58,
  settimeofday: 170,
  clock_settime: 112,
  clock_adjtime: 266,
  adjtimex: 171,
  sethostname: 161,
  setdomainname: 162,
  quotactl: 60,
  quotactl_fd: 443,
  socket: 198,
  socketpair: 199,
};

export interface ArchInfo {
  /** The AUDIT_ARCH_* value the kernel puts in seccomp_data.arch for this architecture's native calls. */
  auditArch: number;
  syscalls: SyscallTable;
  /**
   * Syscall numbers at or above this belong to another ABI on the same architecture (x86-64's x32 ABI sets
   * bit 30 and keeps AUDIT_ARCH_X86_64); undefined where there is none.
   */
  foreignAbiFrom?: number;
}

export const ARCHES: Readonly<Record<FilterArch, ArchInfo>> = {
  x86_64: { auditArch: 0xc000003e, syscalls: X86_64, foreignAbiFrom: 0x40000000 },
  aarch64: { auditArch: 0xc00000b7, syscalls: AARCH64 },
};

/** The filter architecture of `nodeArch` (process.arch), undefined where the wall has no filter. */
export function filterArch(nodeArch: string = process.arch, byteOrder: string = endianness()): FilterArch | undefined {
  if (byteOrder !== "LE") return undefined;
  if (nodeArch === "x64") return "x86_64";
  if (nodeArch === "arm64") return "aarch64";
  return undefined;
}
