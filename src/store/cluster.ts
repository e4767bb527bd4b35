import type { JsonObject } from "../turns/json.js";
import type { RunRecord } from "./run-record.js";

/*
 * What a store that many `hookbox serve` processes share (PostgreSQL) adds to the Store interface: the leases
 * under which each run executes on one node, their takeover when a node stops renewing them, control messages
 * (continue, approve, cancel) carried to a run's owner from any node, wake-ups when any node commits a run's
 * events, rate limits shared by every node, and whether the database answers. The session layer drives it
 * (src/session/cluster-member.ts); docs/server.md, "Many servers on one PostgreSQL", is the contract.
 */

/** A run this node executes, and the epoch (fencing token) its lease has. */
export interface HeldRun {
  runId: string;
  epoch: number;
}

/** A request for the node that owns a run. */
export type RunControl =
  | { kind: "continue"; runId: string; pauseId: string }
  | { kind: "approval"; runId: string; pauseId: string; answer: JsonObject }
  | { kind: "cancel"; runId: string; reason: string };

/** The owner's answer: done (with what the handle said), or refused with the status and error an HTTP client gets. */
export type ControlReply = { ok: true; value?: JsonObject } | { ok: false; status: number; code: string; message: string; path?: string };

export interface ClusterStore {
  /** This node's name (in `run-resumed {node}` and in the runs it owns). */
  readonly node: string;
  /** How long a lease lasts unless renewed, ms. */
  readonly leaseMs: number;
  /** Extends this node's leases of `runs`; returns the ids of those it no longer holds (another node took them). */
  renewLeases(runs: HeldRun[]): Promise<string[]>;
  /**
   * Takes over at most `limit` running runs whose leases have expired, each locked with `FOR UPDATE SKIP LOCKED`
   * (so two nodes never take the same one): `run-interrupted`, then reopened under this node with its next epoch
   * and `run-resumed {node}`, in one transaction. Returns them as reopened.
   */
  claimExpiredRuns(options: { limit: number; ownerPid: number; ownerInstance: string }): Promise<RunRecord[]>;
  /** Gives up this node's leases of `runs` at once, so another node may take them over without waiting. */
  releaseLeases(runs: HeldRun[]): Promise<void>;
  /**
   * Carries `control` to the node that owns its run and resolves with that node's answer: undefined when the run
   * has no owner (it is not running), a 503 OWNER_UNREACHABLE reply when its owner did not answer within `timeoutMs`.
   */
  sendControl(control: RunControl, timeoutMs: number): Promise<ControlReply | undefined>;
  /** Answers the controls sent to this node with `handler`, until the returned function is called. */
  serveControls(handler: (control: RunControl) => Promise<ControlReply>): () => void;
  /** Calls `listener` whenever any node commits events of `runId` (a wake-up: the table holds the events). */
  watchRun(runId: string, listener: () => void): () => void;
  /**
   * Takes one token from the bucket `key` that every node shares (`perMinute` tokens, refilled continuously,
   * at most `perMinute` saved up): 0 when taken, else the ms until one is available.
   */
  takeToken(key: string, perMinute: number): Promise<number>;
  /** Whether this node reaches the database: when not, it takes no runs, and `/healthz` says why. */
  health(): { ok: true } | { ok: false; reason: string };
}

export type { RunRecord };
