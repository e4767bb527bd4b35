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
}
