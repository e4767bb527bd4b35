import type { Isolation } from "./api.js";
import type { Evictable, LiveIsolates } from "./live-isolates.js";
import type { Supervisor } from "./supervisor.js";
import type { WorkerExit } from "./worker-exit.js";
import type { WorkerProcess } from "./worker-process.js";

/**
 * Whether a tenant (with every sandbox it owns: deployments, shadows, replays, upload checks) broke a limit.
 * Shared by those sandboxes, so none of them starts afresh on a shared worker once one has breached.
 */
export interface TenantStanding {
  quarantined: boolean;
}

/** What placement asks of the tenant it places. */
export interface PlacedTenant extends Evictable {
  readonly tenant: string;
  /** Whether a message of a callback in progress went to the current worker (the tenant cannot move then). */
  hasPlacedCallbacks(): boolean;
}

/**
 * Where one tenant's isolate lives: its worker process, assigned by the supervisor on first use and again
 * when the tenant must move (its worker retires, the tenant was quarantined, or its isolation mode or cordon
 * changed).
 * A tenant moves only when nothing of it runs on its worker; leaving a worker disposes its isolate there.
 */
export class TenantPlacement {
  private current: WorkerProcess | undefined;
  /** Set by the pool; a change takes effect when nothing of the tenant runs (the tenant moves). */
  isolation: Isolation;
  /** Set by the pool, as the isolation is: the tenant only ever shares a worker with tenants of its cordon. */
  cordon: string;

  constructor(
    private readonly placed: PlacedTenant,
    where: { isolation: Isolation; cordon: string },
    private readonly supervisor: Supervisor,
    private readonly live: LiveIsolates,
    /** Its owner's standing (placement of a sandbox the tenant owns shares it). */
    private readonly standing: TenantStanding = { quarantined: false },
  ) {
    this.isolation = where.isolation;
    this.cordon = where.cordon;
  }

  get worker(): WorkerProcess | undefined {
    return this.current;
  }

  /** The tenant breached a bound inside its worker, or overran its time: from now on it runs apart. */
  quarantine(): void {
    this.standing.quarantined = true;
  }

  /** The worker for the tenant's next message: its own, or a new assignment when it should move and may. */
  workerForNext(): WorkerProcess {
    const current = this.current;
    if (current !== undefined && current.alive) {
      if (!this.shouldMove(current) || this.placed.hasPlacedCallbacks()) return this.used(current);
      this.leave();
    }
    this.current = this.supervisor.assign(this.placed.tenant, {
      quarantined: this.standing.quarantined,
      isolation: this.isolation,
      cordon: this.cordon,
    });
    return this.used(this.current);
  }

  /**
   * Whether a message may follow those in flight to `worker` (callback-gate.ts): only while the tenant stays
   * there. When it should move, the gate waits until nothing of the tenant is in flight, then asks workerForNext.
   */
  mayPipelineTo(worker: WorkerProcess): boolean {
    if (this.current !== worker || !worker.alive || this.shouldMove(worker)) return false;
    this.used(worker);
    return true;
  }

  /** A message to `worker` ended: the idle clock starts now, not when the message started. */
  messageEnded(worker: WorkerProcess): void {
    this.supervisor.checkBudget(worker);
    if (this.current === worker) this.live.touch(this.placed);
  }

  /**
   * The supervisor lost `worker`. Returns whether it was the tenant's, and whether the tenant is the one that
   * overran its time there (it is quarantined then).
   */
  workerLost(worker: WorkerProcess, exit: WorkerExit): { ours: boolean; culprit: boolean } {
    if (this.current !== worker) return { ours: false, culprit: false };
    this.current = undefined;
    this.live.forget(this.placed);
    const culprit = exit.culpritTenant === this.placed.tenant;
    if (culprit) this.standing.quarantined = true;
    return { ours: true, culprit };
  }

  /** Leaves the worker if the tenant should move (callers know nothing of it runs there). */
  moveIfDue(): void {
    if (this.current !== undefined && this.shouldMove(this.current)) this.leave();
  }

  /** Leaves the worker: the isolate there is disposed. */
  leave(): void {
    const worker = this.current;
    if (worker === undefined) return;
    this.current = undefined;
    this.live.forget(this.placed);
    worker.send({ type: "drop-tenant", tenant: this.placed.tenant });
    this.supervisor.release(this.placed.tenant, worker);
  }

  private used(worker: WorkerProcess): WorkerProcess {
    this.live.touch(this.placed);
    return worker;
  }

  /** Retiring workers are left; so are shared ones once quarantined, and workers of another isolation mode or cordon. */
  private shouldMove(worker: WorkerProcess): boolean {
    if (worker.retiring || (this.standing.quarantined && worker.role !== "quarantine")) return true;
    if (this.supervisor.cordon(worker) !== this.cordon) return true;
    return this.supervisor.isDedicated(worker) !== (this.isolation === "process-per-tenant");
  }
}
