/** What the wall probe is asked to try (probe-inside.ts), and what it reports. */

export interface ProbePlan {
  /** Files to read (a host secret, /etc/shadow, the store...). */
  reads?: string[];
  /** Files to create. */
  writes?: string[];
  /** A host loopback port to connect to. */
  port?: number;
  /** Try to start a child process. */
  spawn?: boolean;
  /** Wait this long before reporting, ms (so the host can look at the process from outside). */
  pauseMs?: number;
  /** Native programs to run inside (paths inside the wall; only without the permission model, which refuses it). */
  natives?: NativeRun[];
}

export interface NativeRun {
  path: string;
  args: string[];
  timeoutMs?: number;
}

export interface NativeResult {
  target: string;
  /** Exit code, or null when a signal ended it. */
  status: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  error?: string;
}

/** What the kernel says of the process itself (/proc/self/status and /proc/self/limits). */
export interface SelfReport {
  /** 0 none, 1 strict, 2 filter. */
  seccomp: number | null;
  seccompFilters: number | null;
  noNewPrivs: number | null;
  /** Hard limits by /proc/self/limits name ("Max processes"...): a number, or "unlimited". */
  limits: Record<string, number | "unlimited">;
}

export interface Attempt {
  target: string;
  ok: boolean;
  /** What the action returned (a read's first bytes), when it worked. */
  detail?: string;
  error?: string;
}

export interface ProbeReport {
  uid: number;
  gid: number;
  /** Names of the environment variables visible inside. */
  env: string[];
  /** `/proc/self/ns/*` links as seen inside (null where the permission model refused to read them). */
  namespaces: Record<string, string | null>;
  node: string;
  v8: string;
  permissionModel: boolean;
  isolatedVm: { version?: string; loads: boolean; error?: string };
  reads: Attempt[];
  writes: Attempt[];
  connect?: Attempt;
  spawn?: Attempt;
  /** Null where the permission model refused to read /proc/self. */
  self: SelfReport | null;
  natives?: NativeResult[];
}
