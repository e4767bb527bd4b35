/*
 * The resource limits of one walled process (docs/sandbox.md, "Resource limits"). Two layers: rlimits,
 * set by prlimit (util-linux) as the last step before Node inside the wall, which every Linux host has;
 * and a cgroup of its own (cgroup.ts) where the host can make one, which is what keeps one worker's
 * fork bomb or memory bomb from reaching its siblings.
 */

export interface ResourceRequest {
  /** The process's memory ceiling, bytes: its cgroup's memory limit. */
  memoryBytes?: number;
}

export interface ResourceLimits {
  memoryBytes: number;
  /** Processes and threads: the cgroup's pids.max, and RLIMIT_NPROC where that counts per worker. */
  processes: number;
  openFiles: number;
}

/*
 * A worker runs 11-13 threads (Node's platform and libuv pools, isolated-vm's) whatever its tenant count;
 * 128 leaves room for a busier Node and is far below what the machine can hold for every worker at once.
 * A worker holds 20-30 descriptors; 256 leaves room and still bounds a descriptor flood to itself.
 */
export const DEFAULT_PROCESSES = 128;
export const DEFAULT_OPEN_FILES = 256;
/** What a worker gets with the default workerRssBudgetMb (supervisor.ts): the probe is launched with it too. */
export const DEFAULT_MEMORY_BYTES = 2560 * 1048576;

/*
 * RLIMIT_NPROC counts every process of the real uid. With the host unprivileged, each worker has a user
 * namespace of its own and the count is its own. With the host as root, every worker runs as uid 65534 in
 * the host's namespace and shares one count: the rlimit is then only a backstop for the machine (a bomb
 * that reaches it also stops its siblings from starting threads), and the per-worker bound is the cgroup's.
 */
export const SHARED_UID_PROCESSES = 16384;

export function resourceLimits(request: ResourceRequest = {}): ResourceLimits {
  return {
    memoryBytes: request.memoryBytes ?? DEFAULT_MEMORY_BYTES,
    processes: DEFAULT_PROCESSES,
    openFiles: DEFAULT_OPEN_FILES,
  };
}

/**
 * prlimit's arguments before the command. No memory rlimit: V8 maps about 530 MB of private writable
 * address space per isolate that it never touches (50 isolates: VmData 26 GB, VmSize 40 GB, RSS 110 MB),
 * so RLIMIT_DATA and RLIMIT_AS bound the number of tenants, not memory; the memory ceiling is the
 * cgroup's, which counts pages actually used. RLIMIT_FSIZE 0: nothing inside has anything to write (the root is read-only), and a
 * regular file that somehow became writable still could not grow (the writer gets SIGXFSZ).
 */
export function prlimitArgs(limits: ResourceLimits, options: { sharedUid: boolean }): string[] {
  const both = (value: number) => `${value}:${value}`;
  const processes = options.sharedUid ? SHARED_UID_PROCESSES : limits.processes;
  return [`--nproc=${both(processes)}`, `--nofile=${both(limits.openFiles)}`, `--fsize=${both(0)}`, `--core=${both(0)}`, "--"];
}
