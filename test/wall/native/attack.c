/*
 * A native-code stand-in for an attacker who escaped V8 into a walled worker (test/wall/native.test.ts):
 * it makes the raw syscalls such code would, and prints what the kernel answered as one JSON line.
 * Built by the test with the machine's C compiler; needs nothing but libc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int first = 1;

/*
 * Runs one attempt in a child of its own (an unshare or a personality change must not colour the next one)
 * and prints its "name": errno pair (0 when the call worked).
 */
#define ATTEMPT(name, call)                         \
  do {                                              \
    pid_t child = fork();                           \
    if (child == 0) {                               \
      long result = (call);                         \
      _exit(result < 0 ? (errno & 0xff) : 0);       \
    }                                               \
    int status = 0;                                 \
    waitpid(child, &status, 0);                     \
    int code = child < 0 ? 255 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); \
    printf("%s\"%s\":%d", first ? "{" : ",", name, code); \
    first = 0;                                      \
  } while (0)

/* A call that made a child: the child leaves at once. */
static long reap(long pid) {
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid((pid_t)pid, NULL, __WALL);
  return pid;
}

static long i386_getpid(void) {
#if defined(__x86_64__)
  long result;
  /* getpid through the i386 entry point (int 0x80, number 20): another architecture to the filter. */
  __asm__ volatile("int $0x80" : "=a"(result) : "a"(20) : "memory");
  if (result < 0) errno = (int)-result;
  return result < 0 ? -1 : 0;
#else
  errno = ENOSYS;
  return -1;
#endif
}

struct clone_args_v0 {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static void syscalls(int keys) {
  struct clone_args_v0 args = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
  char source[8] = "secret", target[8];
  struct iovec local = {target, sizeof target}, remote = {source, sizeof source};
  char params[120] = {0};
  int pair[2];
  ATTEMPT("unshare_user", unshare(CLONE_NEWUSER));
  ATTEMPT("unshare_net", unshare(CLONE_NEWNET));
  ATTEMPT("clone_newuser", reap(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)));
  ATTEMPT("clone_newpid", reap(syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0)));
  ATTEMPT("clone_plain", reap(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)));
  ATTEMPT("clone3_newuser", reap(syscall(SYS_clone3, &args, sizeof args)));
  ATTEMPT("setns", syscall(SYS_setns, 0, 0));
  ATTEMPT("ptrace_traceme", ptrace(PTRACE_TRACEME, 0, 0, 0));
  ATTEMPT("process_vm_readv", syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0));
  if (keys) {
    ATTEMPT("add_key", syscall(SYS_add_key, "user", "hookbox-probe", "payload", 7, -4 /* KEY_SPEC_USER_KEYRING */));
    ATTEMPT("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -4, 0));
  }
  ATTEMPT("bpf", syscall(SYS_bpf, 9999, NULL, 0));
  ATTEMPT("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
  ATTEMPT("userfaultfd", syscall(SYS_userfaultfd, 0));
  ATTEMPT("io_uring_setup", syscall(SYS_io_uring_setup, 1, params));
  ATTEMPT("mount", mount("none", "/tmp", "tmpfs", 0, NULL));
  ATTEMPT("chroot", chroot("/"));
  ATTEMPT("personality_query", personality(0xffffffff));
  ATTEMPT("personality_set", personality(PER_LINUX32));
  ATTEMPT("socket_inet", socket(AF_INET, SOCK_STREAM, 0));
  ATTEMPT("socket_inet6", socket(AF_INET6, SOCK_DGRAM, 0));
  ATTEMPT("socket_netlink", socket(AF_NETLINK, SOCK_RAW, 0));
  ATTEMPT("socket_packet", socket(AF_PACKET, SOCK_RAW, 0));
  ATTEMPT("socket_unix", socket(AF_UNIX, SOCK_STREAM, 0));
  ATTEMPT("socketpair_unix", socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
  ATTEMPT("socketpair_inet", socketpair(AF_INET, SOCK_STREAM, 0, pair));
#if defined(__x86_64__)
  ATTEMPT("x32_getpid", syscall(0x40000000 | SYS_getpid));
  ATTEMPT("i386_getpid", i386_getpid());
#endif
  printf("}\n");
}

/* Forks until the kernel refuses; the children sleep. Reports, holds them for hold_ms, then leaves them. */
static void forkbomb(long hold_ms) {
  long forks = 0;
  int error = 0;
  for (;;) {
    pid_t pid = fork();
    if (pid < 0) {
      error = errno;
      break;
    }
    if (pid == 0) {
      close(0), close(1), close(2);
      for (;;) pause();
    }
    if (++forks >= 100000) break;
  }
  printf("{\"forks\":%ld,\"errno\":%d}\n", forks, error);
  fflush(stdout);
  struct timespec hold = {hold_ms / 1000, (hold_ms % 1000) * 1000000};
  nanosleep(&hold, NULL);
}

/* Allocates and touches memory until refused or killed; reports how far it got when refused. */
static void membomb(void) {
  long chunks = 0;
  for (;; chunks++) {
    char *chunk = mmap(NULL, 16 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (chunk == MAP_FAILED) break;
    memset(chunk, 1, 16 << 20);
    if (chunks >= 4096) break; /* 64 GB: nothing held it */
  }
  printf("{\"allocatedMb\":%ld,\"errno\":%d}\n", chunks * 16, errno);
}

static void limits(void) {
  const int ids[] = {RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_CORE, RLIMIT_DATA, RLIMIT_AS};
  const char *names[] = {"nproc", "nofile", "fsize", "core", "data", "as"};
  printf("{");
  for (int i = 0; i < 6; i++) {
    struct rlimit limit;
    getrlimit(ids[i], &limit);
    printf("%s\"%s\":%lld", i ? "," : "", names[i], limit.rlim_max == RLIM_INFINITY ? -1LL : (long long)limit.rlim_max);
  }
  printf("}\n");
}

/*
 * A channel between two separately launched workers through the kernel's keyrings: "keyring-write NAME" adds a
 * key to the user keyring (expiring in 60 s, should it stay), "keyring-read NAME" looks for it there, reads it
 * and invalidates it. Each prints the errno of each step (0 when it worked) and what it read.
 */
static void keyring_write(const char *name) {
  long key = syscall(SYS_add_key, "user", name, "tenant-a-secret", 15, -4 /* KEY_SPEC_USER_KEYRING */);
  int added = key < 0 ? errno : 0;
  if (key >= 0) syscall(SYS_keyctl, 15 /* KEYCTL_SET_TIMEOUT */, key, 60);
  printf("{\"add_key\":%d}\n", added);
}

static void keyring_read(const char *name) {
  char payload[64] = {0};
  long key = syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -4 /* KEY_SPEC_USER_KEYRING */, "user", name, 0);
  int searched = key < 0 ? errno : 0;
  int read = -1;
  if (key >= 0) {
    read = syscall(SYS_keyctl, 11 /* KEYCTL_READ */, key, payload, sizeof payload - 1) < 0 ? errno : 0;
    syscall(SYS_keyctl, 21 /* KEYCTL_INVALIDATE */, key);
  }
  printf("{\"search\":%d,\"read\":%d,\"payload\":\"%s\"}\n", searched, read, payload);
}

int main(int argc, char **argv) {
  const char *command = argc > 1 ? argv[1] : "";
  if (!strcmp(command, "syscalls")) syscalls(argc > 2 && !strcmp(argv[2], "keys"));
  else if (!strcmp(command, "forkbomb")) forkbomb(argc > 2 ? atol(argv[2]) : 0);
  else if (!strcmp(command, "membomb")) membomb();
  else if (!strcmp(command, "limits")) limits();
  else if (!strcmp(command, "keyring-write") && argc > 2) keyring_write(argv[2]);
  else if (!strcmp(command, "keyring-read") && argc > 2) keyring_read(argv[2]);
  else {
    fprintf(stderr, "usage: attack syscalls [keys]|forkbomb HOLD_MS|membomb|limits|keyring-write NAME|keyring-read NAME\n");
    return 2;
  }
  return 0;
}
