import type { Isolation } from "./api.js";
import type { WorkerExit } from "./worker-exit.js";
import { WorkerProcess, type WorkerRole } from "./worker-process.js";
import type { Launcher } from "./wall/launcher.js";
import { DEFAULT_CORDON } from "./blast-radius.js";

export interface SupervisorOptions {
  workerPath: string;
  launcher: Launcher;
  workers: number;
  graceMs: number;
  rssBudgetBytes: number;
  /** Largest frame a worker may send (worker-process.ts). */
  maxFrameBytes: number;
  /** A shared worker never holds more tenants than this. */
  maxTenantsPerWorker: number;
  /**
   * A full group about to grow while the shared workers already hold `workers` x the RSS budget: evict the
   * least recently used idle tenant of `workers` instead, if there is one (true when one went).
   */
  makeRoom: (workers: WorkerProcess[]) => boolean;
  /** A worker went away: its tenants must fail their callbacks in flight on it. */
  onWorkerLost: (worker: WorkerProcess, exit: WorkerExit) => void;
  /** A worker is over its RSS budget: idle tenants should leave it so it can be replaced. */
  onWorkerRetiring: (worker: WorkerProcess) => void;
}

/** How far above the host's own memory limit the kernel's ceiling (the worker's cgroup) sits. */
const CGROUP_MEMORY_MARGIN = 512 * 1048576;

/** A worker starts in well under a second (a walled one 0.3-0.9 s on a 2-core VM at load 20): past this it is stuck. */
const WORKER_BOOT_LIMIT_MS = 30_000;

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

/** Where a tenant may be placed: its standing, its isolation mode and its cordon. */
export interface Assignment {
  quarantined: boolean;
  isolation: Isolation;
  /** Tenants of two cordons never share a worker process (docs/sandbox.md, "Blast radius"). */
  cordon: string;
}

/**
 * Owns the sandbox worker processes. Shared workers come in groups, one per cordon and standing: a cordon's
 * tenants in good standing spread over `workers` processes (an empty slot gets a fresh worker before any
 * live one gets crowded), and over more when all of those hold `maxTenantsPerWorker`; its tenants that broke
 * a limit share a quarantine worker (lowest CPU priority), so their loops and memory bombs never share a
 * process with well-behaved tenants. No worker ever holds tenants of two cordons or more than the cap, so a
 * process taken over reaches at most that many tenants, all of its own cordon. Dead or retired workers are
 * replaced lazily, on the next assignment; a worker beyond its group's base count leaves once it is empty.
 * A full group grows only while the shared workers hold less than `workers` x the RSS budget together: past
 * that, the group's least recently used idle tenant is evicted to make room (memory stays where it was
 * before the cap; a busy group still grows, bounded by maxLiveIsolates).
 * A `process-per-tenant` tenant gets a worker of its own (at quarantine priority once it broke a limit),
 * which exits when the tenant leaves it.
 * Once a group has grown past its base count, one spare worker of normal priority is kept started: the next
 * growth of any group takes it, so the tenant that fills a worker does not wait for a process to boot (a
 * walled start costs 0.1-0.9 s). It leaves when a grown worker leaves or when the pool makes room instead of
 * growing (its memory reached), so a pool that no longer grows keeps none.
 */
export class Supervisor {
  /** Shared workers by group (`normal:<cordon>` or `quarantine:<cordon>`). */
  private readonly groups = new Map<string, WorkerProcess[]>();
  private readonly groupOf = new Map<WorkerProcess, string>();
  private readonly cordonOf = new Map<WorkerProcess, string>();
  private readonly retiring = new Set<WorkerProcess>();
  private readonly dedicated = new Set<WorkerProcess>();
  /** A started worker no group holds yet (see the class comment). */
  private spare: WorkerProcess | undefined;
  private closed = false;

  constructor(private readonly options: SupervisorOptions) {}

  /** Starts the default cordon's workers now instead of on first use. */
  prewarm(): void {
    const group = this.group("normal", DEFAULT_CORDON);
    while (group.length < this.baseCount("normal")) this.join(group, "normal", DEFAULT_CORDON);
  }

  assign(tenant: string, options: Assignment): WorkerProcess {
    if (this.closed) throw new Error("sandbox pool is closed");
    const role: WorkerRole = options.quarantined ? "quarantine" : "normal";
    let worker: WorkerProcess;
    if (options.isolation === "process-per-tenant") {
      worker = this.spawn(role, options.cordon);
      this.dedicated.add(worker);
    } else {
      const group = this.group(role, options.cordon);
      let open = this.open(group);
      // A full group grows, but not past the memory the pool's workers were given: there it makes room.
      if (open.length === 0 && this.liveCount(group) >= this.baseCount(role) && this.sharedRssBytes() >= this.memoryBudgetBytes())
        if (this.options.makeRoom(group)) {
          open = this.open(group);
          this.dropSpare("the pool reached its memory: it makes room instead of growing");
        }
      // An empty slot gets a fresh worker before any live worker gets crowded.
      worker =
        this.liveCount(group) < this.baseCount(role) || open.length === 0
          ? this.join(group, role, options.cordon)
          : open.reduce((least, member) => (member.tenants.size < least.tenants.size ? member : least));
    }
    worker.tenants.add(tenant);
    return worker;
  }

  /** The cordon `worker` serves. */
  cordon(worker: WorkerProcess): string {
    return this.cordonOf.get(worker) ?? DEFAULT_CORDON;
  }

  release(tenant: string, worker: WorkerProcess): void {
    worker.tenants.delete(tenant);
    if (this.dedicated.has(worker) && worker.tenants.size === 0) {
      worker.kill({ reason: "retired", detail: `its tenant ${tenant} left it` });
      return;
    }
    const group = this.groups.get(this.groupOf.get(worker) ?? "");
    if (group !== undefined && worker.tenants.size === 0 && worker.inFlight === 0 && this.liveCount(group) > this.baseCount(worker.role)) {
      worker.kill({ reason: "retired", detail: "its group has more workers than it needs" });
      this.dropSpare("a grown worker left: the pool no longer needs a spare");
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

  /** The spare worker's process id, if one is kept (diagnostics and tests). */
  sparePid(): number | undefined {
    return this.spare?.alive ? this.spare.pid : undefined;
  }

  workers(): WorkerProcess[] {
    // A retiring process-per-tenant worker is in two sets: list it once. The spare serves no tenant: not listed.
    const all = new Set([...[...this.groups.values()].flat(), ...this.retiring, ...this.dedicated]);
    return [...all].filter((worker) => worker.alive);
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers();
    if (this.spare?.alive) workers.push(this.spare);
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

  private dropSpare(detail: string): void {
    this.spare?.kill({ reason: "retired", detail });
    this.spare = undefined;
  }

  private group(role: WorkerRole, cordon: string): WorkerProcess[] {
    const key = `${role}:${cordon}`;
    let group = this.groups.get(key);
    if (group === undefined) this.groups.set(key, (group = []));
    return group;
  }

  /** Workers of a group that still take tenants (dead and retiring ones are dropped from it here). */
  private liveCount(group: WorkerProcess[]): number {
    for (let i = group.length - 1; i >= 0; i--) if (!group[i].alive || group[i].retiring) group.splice(i, 1);
    return group.length;
  }

  /** The group's workers with room for another tenant. */
  private open(group: WorkerProcess[]): WorkerProcess[] {
    return group.filter((member) => member.alive && !member.retiring && member.tenants.size < this.options.maxTenantsPerWorker);
  }

  /** What the shared workers hold together, as the host measured it. */
  private sharedRssBytes(): number {
    let total = 0;
    for (const group of this.groups.values()) for (const worker of group) if (worker.alive) total += worker.rssBytes;
    return total;
  }

  /** The memory the pool's shared workers were given: `workers` x the RSS budget (what they held before the cap). */
  private memoryBudgetBytes(): number {
    return this.baseCount("normal") * this.options.rssBudgetBytes;
  }

  private baseCount(role: WorkerRole): number {
    return role === "quarantine" ? 1 : Math.max(1, this.options.workers);
  }

  private join(group: WorkerProcess[], role: WorkerRole, cordon: string): WorkerProcess {
    const growing = this.liveCount(group) >= this.baseCount(role);
    const spare = this.spare;
    let worker: WorkerProcess;
    if (growing && role === "normal" && spare?.alive && !spare.retiring) {
      this.spare = undefined;
      this.cordonOf.set(spare, cordon);
      worker = spare;
    } else worker = this.spawn(role, cordon);
    group.push(worker);
    this.groupOf.set(worker, `${role}:${cordon}`);
    if (growing && this.spare === undefined) this.spare = this.spawn("normal", DEFAULT_CORDON);
    return worker;
  }

  private spawn(role: WorkerRole, cordon: string): WorkerProcess {
    const worker = new WorkerProcess({
      path: this.options.workerPath,
      launcher: this.options.launcher,
      role,
      graceMs: this.options.graceMs,
      bootLimitMs: WORKER_BOOT_LIMIT_MS,
      maxFrameBytes: this.options.maxFrameBytes,
      memoryLimitBytes: memoryLimitBytes(this.options.rssBudgetBytes),
      memorySampleMs: MEMORY_SAMPLE_MS,
      onMemorySample: (worker) => this.checkBudget(worker),
      // The kernel's ceiling (the worker's cgroup, where the host can make one) sits above the host's own
      // measured limit: the host's kill names the call to blame; the kernel's catches what grows between samples.
      memoryBytes: memoryLimitBytes(this.options.rssBudgetBytes) + CGROUP_MEMORY_MARGIN,
      onExit: (worker, exit) => {
        if (this.spare === worker) this.spare = undefined;
        this.retiring.delete(worker);
        this.dedicated.delete(worker);
        const group = this.groups.get(this.groupOf.get(worker) ?? "");
        if (group?.includes(worker)) group.splice(group.indexOf(worker), 1);
        this.groupOf.delete(worker);
        if (!this.closed) this.options.onWorkerLost(worker, exit);
        this.cordonOf.delete(worker);
      },
    });
    this.cordonOf.set(worker, cordon);
    return worker;
  }
}
