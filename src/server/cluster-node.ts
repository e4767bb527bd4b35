import { performance } from "node:perf_hooks";
import type { ClusterStore } from "../store/cluster.js";
import type { SessionManager } from "../session/manager.js";
import { thisProcessInstance } from "../store/process-alive.js";
import { serveControls } from "./run-controls.js";

/*
 * A `hookbox serve` node's part in a cluster (a PostgreSQL store): it answers the controls other nodes send
 * it, renews its runs' leases, and takes over the runs whose nodes stopped renewing theirs (at most a few at a
 * time, each resumed here from its last committed snapshot). A node that cannot reach the database, or that
 * is draining, takes no runs over.
 */

/** Runs one node takes over per look. */
const CLAIM_BATCH = 4;

export interface ClusterNodeOptions {
  manager: SessionManager;
  cluster: ClusterStore;
  /** True once SIGTERM arrived: no runs are taken over. */
  draining(): boolean;
}

export class ClusterNode {
  private readonly stopControls: () => void;
  private readonly timer: NodeJS.Timeout;
  private looking: Promise<void> | undefined;

  constructor(private readonly options: ClusterNodeOptions) {
    this.stopControls = serveControls(options.manager, options.cluster);
    // Looks at least every second, so a run is taken over within leaseMs plus about a second of its node's death.
    this.timer = setInterval(() => void this.tick(), Math.max(100, Math.min(1000, Math.floor(options.cluster.leaseMs / 4))));
    this.timer.unref();
  }

  /** Renews this node's leases (which also tells whether the database answers), then takes expired runs over. */
  tick(): Promise<void> {
    this.looking ??= this.look().finally(() => (this.looking = undefined));
    return this.looking;
  }

  private async look(): Promise<void> {
    const { manager, cluster } = this.options;
    if (manager.leases) await manager.leases.tick();
    else await cluster.renewLeases([]).catch(() => undefined);
    if (this.options.draining() || !cluster.health().ok) return;
    for (;;) {
      const leaseTakenAt = performance.now();
      let claimed;
      try {
        claimed = await cluster.claimExpiredRuns({ limit: CLAIM_BATCH, ownerPid: process.pid, ownerInstance: thisProcessInstance() });
      } catch {
        return; // the database went away; health() says so
      }
      for (const run of claimed) {
        await manager.takeOver(run, leaseTakenAt).catch(async (error: unknown) => {
          // This node cannot run it (a tenant it is not configured for): the run stays interrupted, resumable.
          const reason = `node ${cluster.node} took the run over but could not resume it: ${(error as Error)?.message ?? String(error)}`;
          process.stderr.write(`hookbox serve: run ${run.id}: ${reason}\n`);
          await manager.store.markInterrupted(run.id, reason, { epoch: run.epoch ?? 0 }).catch(() => undefined);
        });
      }
      if (claimed.length < CLAIM_BATCH) return;
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.stopControls();
  }
}
