import { BpfProgram, retErrno, SECCOMP_DATA, SECCOMP_RET_ALLOW } from "./bpf.js";
import { ARCHES, filterArch, type FilterArch } from "./syscalls.js";

/*
 * The wall's syscall filter (docs/sandbox.md, "Syscall filter"): a denylist. Node and isolated-vm make
 * about a hundred distinct syscalls across the test suite and the bench, and an allowlist would break at
 * the next Node or glibc release that adds one; the syscalls below are the kernel interfaces that an
 * escape from V8 would reach for next, and nothing a worker does needs them. Every refusal is an error
 * the caller sees (EPERM), never a signal: a worker whose libuv probes io_uring falls back to its thread
 * pool, and no refused call kills anything.
 */

const EPERM = 1;
const ENOSYS = 38;

/** Refused outright (where the architecture has them). */
export const DENIED_SYSCALLS = [
  // new namespaces, and reaching into other processes
  "unshare",
  "setns",
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "process_madvise",
  "pidfd_getfd",
  "kcmp",
  // the kernel keyring (shared by every process of a uid), kernel programs, and kernel interfaces that
  // keep carrying local privilege escalations
  "keyctl",
  "add_key",
  "request_key",
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "fanotify_init",
  "name_to_handle_at",
  "open_by_handle_at",
  "lookup_dcookie",
  // mounts
  "mount",
  "umount2",
  "pivot_root",
  "chroot",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "move_mount",
  "open_tree",
  "mount_setattr",
  // the machine's own state
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "acct",
  "swapon",
  "swapoff",
  "reboot",
  "syslog",
  "vhangup",
  "settimeofday",
  "clock_settime",
  "clock_adjtime",
  "adjtimex",
  "sethostname",
  "setdomainname",
  "quotactl",
  "quotactl_fd",
  "iopl",
  "ioperm",
  "modify_ldt",
  "uselib",
] as const;

/** clone() flags that make a namespace (CLONE_NEWTIME shares its bit with the exit signal there: clone3 and unshare only). */
export const CLONE_NAMESPACE_FLAGS =
  0x00020000 /* NEWNS */ |
  0x02000000 /* NEWCGROUP */ |
  0x04000000 /* NEWUTS */ |
  0x08000000 /* NEWIPC */ |
  0x10000000 /* NEWUSER */ |
  0x20000000 /* NEWPID */ |
  0x40000000; /* NEWNET */

const AF_UNIX = 1;
/** personality(0xffffffff) only reads the current persona. */
const PERSONALITY_QUERY = 0xffffffff;

/** What the filter does, in words (the doctor reports it). */
export const FILTER_MODE =
  "denylist, EPERM: new namespaces (unshare, setns, clone with namespace flags; clone3 answers ENOSYS so libc falls back to clone), " +
  "ptrace and cross-process access, keyrings, bpf, perf events, userfaultfd, io_uring, mounts, kexec and modules, " +
  "personality changes, sockets other than AF_UNIX, and calls of a foreign architecture or ABI";

/** The filter for `arch`, assembled. */
export function compileFilter(arch: FilterArch): Buffer {
  const { auditArch, syscalls, foreignAbiFrom } = ARCHES[arch];
  const program = new BpfProgram();
  // A call made through another ABI (i386's int 0x80 on x86-64, arm32 on arm64) has other numbers: refuse it.
  program.load(SECCOMP_DATA.arch).jeq(auditArch, "native", "deny").label("native");
  program.load(SECCOMP_DATA.nr);
  if (foreignAbiFrom !== undefined) program.jge(foreignAbiFrom, "deny");
  for (const name of DENIED_SYSCALLS) if (name in syscalls) program.jeq(syscalls[name], "deny");
  // clone3's flags live in memory a filter cannot read: without clone3, glibc and musl use clone.
  program.jeq(syscalls.clone3, "enosys");
  program.jeq(syscalls.clone, "clone");
  program.jeq(syscalls.socket, "family");
  program.jeq(syscalls.socketpair, "family");
  program.jeq(syscalls.personality, "personality");
  program.ret(SECCOMP_RET_ALLOW);
  program.label("clone").load(SECCOMP_DATA.argLow(0)).jset(CLONE_NAMESPACE_FLAGS, "deny", "allow");
  program.label("family").load(SECCOMP_DATA.argLow(0)).jeq(AF_UNIX, "allow", "deny");
  program.label("personality").load(SECCOMP_DATA.argLow(0)).jeq(PERSONALITY_QUERY, "allow", "deny");
  program.label("allow").ret(SECCOMP_RET_ALLOW);
  program.label("deny").ret(retErrno(EPERM));
  program.label("enosys").ret(retErrno(ENOSYS));
  return program.assemble();
}

/** The filter for this host, or undefined where the wall has none (an architecture other than x86-64 and arm64). */
export function hostFilter(): { arch: FilterArch; program: Buffer } | undefined {
  const arch = filterArch();
  return arch === undefined ? undefined : { arch, program: compileFilter(arch) };
}
