import { performance } from "node:perf_hooks";
import { HookboxError } from "../errors.js";
import type { ClusterStore } from "../store/cluster.js";

/*
 * The leases under which this process executes runs on a cluster store (docs/server.md, "Many servers on one
 * PostgreSQL"). Every `leaseMs / 3` one statement renews them all; a run whose renewal finds another epoch was
 * taken over by another node, and is stopped here without another write. Before each tool execution a run
 * checks its lease on this process's monotonic clock (which keeps counting while the process is stopped): a
 * lease renewed less than half a lease ago is held; an older one is renewed first, and a run whose renewal
 * fails runs no tool. That is what keeps a node that was stalled past its lease (GC, SIGSTOP, a network
 * stall) from running a tool its run's new owner runs too.
 */

export interface LeaseHolder {
  /** The runs executing here, with their epochs. */
  held(): { runId: string; epoch: number }[];
  /** Stops a run this process no longer owns, writing nothing more of it. */
  lose(runId: string, reason: string): void;
}

export class RunLeases {
  /** performance.now() when each run's lease was last known renewed (taken, or renewed by a tick). */
  private readonly renewedAt = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly cluster: ClusterStore,
    private readonly holder: LeaseHolder,
  ) {}

  /** A run whose lease was taken at `at` (before its createRun or reopen was sent). */
  taken(runId: string, at: number): void {
    this.renewedAt.set(runId, at);
    this.start();
  }

  forget(runId: string): void {
    this.renewedAt.delete(runId);
  }

  /** Resolves while this process holds `runId`'s lease; rejects with LEASE_LOST (and stops the run) otherwise. */
  async fence(runId: string): Promise<void> {
    const at = this.renewedAt.get(runId);
    if (at !== undefined && performance.now() - at < this.cluster.leaseMs / 2) return;
    await this.tick();
    const renewed = this.renewedAt.get(runId);
    if (renewed === undefined || performance.now() - renewed >= this.cluster.leaseMs / 2) {
      const error = new HookboxError(
        "LEASE_LOST",
        `run ${runId}: this node (${this.cluster.node}) could not renew its lease, so it runs no tool of it; another node takes the run over`,
        { runId },
      );
      this.holder.lose(runId, error.message);
      throw error;
    }
  }

  /** Renews every held lease now (one at a time: a tick in progress is joined). */
  tick(): Promise<void> {
    this.ticking ??= this.renew().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async renew(): Promise<void> {
    const held = this.holder.held();
    const started = performance.now();
    let lost: string[];
    try {
      lost = await this.cluster.renewLeases(held);
    } catch {
      return; // the database is out of reach: leases age until a renewal gets through (health() says why)
    }
    const gone = new Set(lost);
    for (const run of held) {
      if (gone.has(run.runId)) {
        this.renewedAt.delete(run.runId);
        this.holder.lose(run.runId, `another node took run ${run.runId} over (this node's lease on it had expired)`);
      } else if (this.renewedAt.has(run.runId)) this.renewedAt.set(run.runId, started);
    }
  }

  private start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), Math.max(200, Math.floor(this.cluster.leaseMs / 3)));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
