import type { FinalStatus } from "../events/types.js";
import type { RunOptions } from "../host/types.js";
import type { RunDeployment } from "./policy-types.js";

/*
 * A run as the store keeps it: its own module because both the Store interface (types.ts) and the cluster
 * side of a shared store (cluster.ts) hand runs out.
 */

/** `running` only while a live process owns the run; everything else is final or resumable. */
export type StoredRunStatus = "running" | FinalStatus;

export interface RunRecord {
  id: string;
  sessionId: string;
  /** "" until the run's first event names it (the loop chooses it when the run starts). */
  inferenceId: string;
  prompt: string;
  options: RunOptions;
  status: StoredRunStatus;
  reason?: string;
  errorCode?: string;
  iterations: number;
  startedMs: number;
  finishedMs?: number;
  /** Highest committed event seq (0 before the first event). */
  lastSeq: number;
  /** Process that owns a `running` run; a dead owner means the run was interrupted. */
  ownerPid?: number;
  /** That process's instance (process-alive.ts): tells a live owner from a later process that got its pid. */
  ownerInstance?: string;
  /** The deployment (script versions) the run started with; its resume uses the same. */
  deployment?: RunDeployment;
  /**
   * The run's ownership epoch (its lease's fencing token): 1 when it starts, one more at each resume or takeover.
   * A write that carries an older epoch is refused (`RunWrite.epoch`). 0 on runs stored before epochs existed.
   */
  epoch?: number;
  /** Cluster stores: the node that owns a `running` run, and when its lease runs out unless renewed (epoch ms). */
  ownerNode?: string;
  leaseExpiresMs?: number;
}
