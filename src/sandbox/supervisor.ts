import type { Isolation } from "./api.js";
import type { WorkerExit } from "./worker-exit.js";
import { WorkerProcess, type WorkerRole } from "./worker-process.js";
import type { Launcher } from "./wall/launcher.js";

export interface SupervisorOptions {
  workerPath: string;
  launcher: Launcher;
  workers: number;
  graceMs: number;
  rssBudgetBytes: number;
  /** Largest frame a worker may send (worker-process.ts). */
  maxFrameBytes: number;
  /** A worker went away: its tenants must fail their callbacks in flight on it. */
  onWorkerLost: (worker: WorkerProcess, exit: WorkerExit) => void;
  /** A worker is over its RSS budget: idle tenants should leave it so it can be replaced. */
  onWorkerRetiring: (worker: WorkerProcess) => void;
}

/** How far above the host's own memory limit the kernel's ceiling (the worker's cgroup) sits. */
const CGROUP_MEMORY_MARGIN = 512 * 1048576;

/** How often the host measures a working worker's memory (and how old a measure the budget check may use). */
const MEMORY_SAMPLE_MS = 100;

/**
 * Over its budget a worker is retired once its tenants are idle; this far over it, while a call runs, it
 * cannot wait for that and is killed: twice the budget, and at least 256 MB over it (a small budget is
 * below a worker's own footprint, and only meant to retire it early).
 */
function memoryLimitBytes(budgetBytes: number): number {
  return budgetBytes + Math.max(budgetBytes, 256 * 1048576);
}

/**
 * Owns the sandbox worker processes: a small pool for tenants in good standing and one quarantine worker
 * (lowest CPU priority) for tenants that broke a limit, so their loops and memory bombs never share a
 * process with well-behaved tenants. Dead or retired workers are replaced lazily, on the next assignment.
 * A `process-per-tenant` tenant gets a worker of its own (at quarantine priority once it broke a limit),
 * which exits when the tenant leaves it.
 */
export class Supervisor {
  private readonly slots: (WorkerProcess | undefined)[];
  private quarantine: WorkerProcess | undefined;
  private readonly retiring = new Set<WorkerProcess>();
  private readonly dedicated = new Set<WorkerProcess>();
  private closed = false;

  constructor(private readonly options: SupervisorOptions) {
    this.slots = new Array<WorkerProcess | undefined>(Math.max(1, options.workers)).fill(undefined);
  }

  /** Starts the pool's workers now instead of on first use. */
  prewarm(): void {
    for (let i = 0; i < this.slots.length; i++) this.slots[i] ??= this.spawn("normal");
  }

  assign(tenant: string, options: { quarantined: boolean; isolation: Isolation }): WorkerProcess {
    if (this.closed) throw new Error("sandbox pool is closed");
    const { quarantined } = options;
    let worker: WorkerProcess;
    if (options.isolation === "process-per-tenant") {
      worker = this.spawn(quarantined ? "quarantine" : "normal");
      this.dedicated.add(worker);
    } else if (quarantined) {
      if (this.quarantine === undefined || !this.quarantine.alive || this.quarantine.retiring) this.quarantine = this.spawn("quarantine");
      worker = this.quarantine;
    } else {
      for (let i = 0; i < this.slots.length; i++) {
        const slot = this.slots[i];
        if (slot !== undefined && (!slot.alive || slot.retiring)) this.slots[i] = undefined;
      }
      // An empty slot gets a fresh worker before any live worker gets crowded.
      const empty = this.slots.findIndex((slot) => slot === undefined);
      if (empty !== -1) worker = this.slots[empty] = this.spawn("normal");
      else worker = (this.slots as WorkerProcess[]).reduce((least, slot) => (slot.tenants.size < least.tenants.size ? slot : least));
    }
    worker.tenants.add(tenant);
    return worker;
  }

  release(tenant: string, worker: WorkerProcess): void {
    worker.tenants.delete(tenant);
    if (this.dedicated.has(worker) && worker.tenants.size === 0) {
      worker.kill({ reason: "retired", detail: `its tenant ${tenant} left it` });
      return;
    }
    this.reapIfDone(worker);
  }

  /** Whether `worker` is a process-per-tenant worker. */
  isDedicated(worker: WorkerProcess): boolean {
    return this.dedicated.has(worker);
  }

  /**
   * Called after every reply and at each memory sample taken while a worker works: a worker whose memory,
   * as the host measures it, is over the RSS budget is retired and replaced.
   */
  checkBudget(worker: WorkerProcess): void {
    // A retiring worker whose last tenant left while a call was in flight is reaped once that reply is in.
    if (worker.retiring) return this.reapIfDone(worker);
    if (!worker.alive || worker.rssBytes <= this.options.rssBudgetBytes) return;
    worker.retiring = true;
    this.retiring.add(worker);
    this.options.onWorkerRetiring(worker);
    this.reapIfDone(worker);
  }

  workers(): WorkerProcess[] {
    // A retiring process-per-tenant worker is in two sets: list it once.
    const all = new Set([...this.slots, this.quarantine, ...this.retiring, ...this.dedicated]);
    return [...all].filter((worker): worker is WorkerProcess => worker !== undefined && worker.alive);
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers();
    for (const worker of workers) {
      worker.child.ref(); // keep the host alive until the exit is observed
      worker.kill({ reason: "closed", detail: "the sandbox pool was closed" });
    }
    await Promise.all(workers.map((worker) => worker.exited));
  }

  private reapIfDone(worker: WorkerProcess): void {
    if (worker.retiring && worker.tenants.size === 0 && worker.inFlight === 0) {
      worker.kill({ reason: "retired", detail: `over the RSS budget (${Math.round(worker.rssBytes / 1048576)} MB)` });
    }
  }

  private spawn(role: WorkerRole): WorkerProcess {
    return new WorkerProcess({
      path: this.options.workerPath,
      launcher: this.options.launcher,
      role,
      graceMs: this.options.graceMs,
      maxFrameBytes: this.options.maxFrameBytes,
      memoryLimitBytes: memoryLimitBytes(this.options.rssBudgetBytes),
      memorySampleMs: MEMORY_SAMPLE_MS,
      onMemorySample: (worker) => this.checkBudget(worker),
      // The kernel's ceiling (the worker's cgroup, where the host can make one) sits above the host's own
      // measured limit: the host's kill names the call to blame; the kernel's catches what grows between samples.
      memoryBytes: memoryLimitBytes(this.options.rssBudgetBytes) + CGROUP_MEMORY_MARGIN,
      onExit: (worker, exit) => {
        this.retiring.delete(worker);
        this.dedicated.delete(worker);
        if (!this.closed) this.options.onWorkerLost(worker, exit);
      },
    });
  }
}
