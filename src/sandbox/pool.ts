import {
  DEFAULT_SANDBOX_LIMITS,
  type SandboxLimits,
  type Isolation,
  type SandboxPool,
  type TenantSandbox,
  type TenantSandboxOptions,
} from "./api.js";
import { defaultWorkerPath } from "./paths.js";
import { DEFAULT_EVICTION, LiveIsolates } from "./live-isolates.js";
import { Supervisor } from "./supervisor.js";
import { checkCordon, checkMaxTenantsPerWorker, DEFAULT_CORDON, DEFAULT_MAX_TENANTS_PER_WORKER } from "./blast-radius.js";
import { TenantSandboxImpl } from "./tenant-sandbox.js";
import type { TenantStanding } from "./placement.js";
import { workerLauncher, type WallMode } from "./wall/mode.js";
import type { WallKind } from "./wall/launcher.js";

export interface SandboxPoolOptions {
  /** Sandbox worker processes for tenants in good standing (default 2). A quarantine worker comes on top. */
  workers?: number;
  /**
   * A worker whose processes' resident memory (measured by the host) exceeds this is retired and replaced
   * once its tenants are idle; at twice this (and at least 256 MB over it) while a call runs it is killed at
   * once, the call failing with SANDBOX_MEMORY (default 1024 MB).
   */
  workerRssBudgetMb?: number;
  /** Callbacks one tenant may have waiting before new ones are refused with SANDBOX_OVERLOADED (default 256). */
  maxQueueDepth?: number;
  /** How deep middleware -> next() -> middleware chains may nest across sandbox calls (default 32). */
  maxNestingDepth?: number;
  /** Cap on every payload crossing the boundary, each direction, in bytes (default 8 MiB). */
  maxPayloadBytes?: number;
  /** Extra time beyond a callback's own limit before the supervisor kills an unresponsive worker (default 500 ms). */
  killGraceMs?: number;
  /** Log events per second per tenant (default 100) and characters per message (default 4096). */
  logsPerSecond?: number;
  maxLogChars?: number;
  /** Start the workers now instead of on first use. */
  prewarm?: boolean;
  /** Override the worker entry (default: dist/sandbox-worker.js). */
  workerPath?: string;
  /** Default isolation of the pool's tenants (default "shared"); `pool.tenant()` may set it per tenant. */
  isolation?: Isolation;
  /**
   * A shared worker holds at most this many tenants (default 64): what one worker taken over can reach. A
   * cordon whose workers are all full gets another. `pool.tenant(name, limits, { cordon })` keeps tiers apart.
   */
  maxTenantsPerWorker?: number;
  /** A tenant's isolate unused for this long is disposed, ms (default 300000; 0: never by age). */
  idleMs?: number;
  /** At most this many tenants keep a live isolate; beyond it the least recently used idle ones are disposed (default 2000). */
  maxLiveIsolates?: number;
  /**
   * The second wall around every worker process (docs/sandbox.md): "auto" (default) uses bubblewrap when it
   * works here and warns once otherwise, "required" throws WALL_UNAVAILABLE without it, "none" opts out.
   */
  wall?: WallMode;
}

export interface PoolStats {
  /** Tenants holding a live isolate in some worker (at most maxLiveIsolates, plus busy ones). */
  liveIsolates: number;
  /** Tenants the pool knows (live or evicted). */
  tenants: number;
  /** Isolates disposed by idleMs or the maxLiveIsolates cap so far. */
  evictions: number;
  /** Live worker processes, process-per-tenant ones included. */
  workers: number;
  /** The cap on tenants per shared worker (the blast radius of a worker taken over). */
  maxTenantsPerWorker: number;
  /** Each live shared worker's tenant count, with its cordon and role: none above the cap. */
  tenantsPerWorker: { cordon: string; role: "normal" | "quarantine"; tenants: number }[];
  /** Workers lost so far by why (a watchdog's kill, a crash); their tenants' next calls start new ones. Retired and closed ones are not counted. */
  workerRestarts: { "killed-overdue": number; "killed-memory": number; crashed: number };
  /** Tenants (owners) running apart in the quarantine worker after a breach. */
  quarantinedTenants: number;
  /** The launched process id (as `launchedPid` of `workers()`) of the started worker kept for the next growth, if any. */
  spareWorkerPid: number | undefined;
}

export interface WorkerInfo {
  /** The Node process running guest code, as the host sees it (inside the second wall, when it is on). */
  pid: number | undefined;
  /** The process the host started: bwrap with the second wall on, the same as `pid` without it. */
  launchedPid: number | undefined;
  role: "normal" | "quarantine";
  isolation: Isolation;
  /** The cordon whose tenants it serves (only those). */
  cordon: string;
  tenants: string[];
  /** Isolates the worker itself reported holding with its last reply. */
  isolates: number;
  rssBytes: number;
  retiring: boolean;
  /** Mean time the worker spent per exec message, ms (diagnostics). */
  meanWorkerMs: number;
  /** Exec messages sent to it and not answered yet, whichever tenants' (several of one tenant's: callback-gate.ts). */
  inFlight: number;
}

export interface SupervisedSandboxPool extends SandboxPool {
  /** The live worker processes (for diagnostics and fault tests). */
  workers(): WorkerInfo[];
  stats(): PoolStats;
  /** The wall the workers run in. */
  readonly wall: WallKind;
  /**
   * Disposes the tenant's isolate now, as idle eviction would, unless something of it runs: its loaded scripts stay,
   * and its next call re-creates the isolate (a cold start). True if it went. `hookbox serve` does this to the
   * tenants it builds ahead of their first request, so they hold no isolate (nor a worker's room) until they run.
   */
  evictIfIdle(tenant: string): boolean;
}

const livePools = new Set<Supervisor>();
let exitHookInstalled = false;

/** Kills our workers if the host exits without closing its pools (the workers also watch their parent). */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const supervisor of livePools)
      for (const worker of supervisor.workers()) worker.kill({ reason: "closed", detail: "the host exited" });
  });
}

export function createSandboxPool(options: SandboxPoolOptions = {}): SupervisedSandboxPool {
  const tenants = new Map<string, TenantSandboxImpl>();
  /** Each owner's standing, shared by its sandboxes (bounded by the owners: sandbox names come and go, owners stay). */
  const standings = new Map<string, TenantStanding>();
  const launcher = workerLauncher(options.wall);
  const maxPayloadBytes = options.maxPayloadBytes ?? 8 * 1048576;
  const maxTenantsPerWorker = options.maxTenantsPerWorker ?? DEFAULT_MAX_TENANTS_PER_WORKER;
  checkMaxTenantsPerWorker(maxTenantsPerWorker);
  const workerRestarts = { "killed-overdue": 0, "killed-memory": 0, crashed: 0 };
  const supervisor = new Supervisor({
    workerPath: options.workerPath ?? defaultWorkerPath(),
    launcher,
    workers: options.workers ?? 2,
    graceMs: options.killGraceMs ?? 500,
    rssBudgetBytes: (options.workerRssBudgetMb ?? 1024) * 1048576,
    // A reply carries a few payloads at most (each bounded by maxPayloadBytes in the worker) and bounded logs.
    maxFrameBytes: 4 * maxPayloadBytes + 1048576,
    maxTenantsPerWorker,
    makeRoom: (workers) => {
      const tenantsThere = new Set(workers.flatMap((worker) => [...worker.tenants]));
      return live.evictLeastRecent((tenant) => tenantsThere.has(tenant.tenant));
    },
    onWorkerLost: (worker, exit) => {
      if (exit.reason !== "retired" && exit.reason !== "closed") workerRestarts[exit.reason] += 1;
      for (const tenant of tenants.values()) tenant.onWorkerLost(worker, exit);
    },
    onWorkerRetiring: (worker) => {
      for (const tenant of tenants.values()) tenant.onWorkerRetiring(worker);
    },
  });
  const live = new LiveIsolates({
    idleMs: options.idleMs ?? DEFAULT_EVICTION.idleMs,
    maxLiveIsolates: options.maxLiveIsolates ?? DEFAULT_EVICTION.maxLiveIsolates,
  });
  livePools.add(supervisor);
  installExitHook();
  if (options.prewarm) supervisor.prewarm();
  const tenantOptions = {
    supervisor,
    live,
    maxQueueDepth: options.maxQueueDepth ?? 256,
    maxNestingDepth: options.maxNestingDepth ?? 32,
    maxPayloadBytes,
    maxLogChars: options.maxLogChars ?? 4096,
    logsPerSecond: options.logsPerSecond ?? 100,
  };
  return {
    wall: launcher.wall,
    tenant(name: string, limits?: Partial<SandboxLimits>, given?: TenantSandboxOptions): TenantSandbox {
      if (given?.cordon !== undefined) checkCordon(given.cordon);
      let tenant = tenants.get(name);
      if (tenant === undefined) {
        const isolation = given?.isolation ?? options.isolation ?? "shared";
        const where = { isolation, cordon: given?.cordon ?? DEFAULT_CORDON };
        const owner = given?.owner ?? name;
        let standing = standings.get(owner);
        if (standing === undefined) standings.set(owner, (standing = { quarantined: false }));
        tenant = new TenantSandboxImpl(name, { ...DEFAULT_SANDBOX_LIMITS, ...limits }, where, tenantOptions, standing);
        tenants.set(name, tenant);
      } else {
        if (limits !== undefined) tenant.limits = { ...tenant.limits, ...limits };
        if (given?.isolation !== undefined) tenant.isolation = given.isolation;
        if (given?.cordon !== undefined) tenant.cordon = given.cordon;
      }
      return tenant;
    },
    evictIfIdle(name: string): boolean {
      return tenants.get(name)?.evictIfIdle() ?? false;
    },
    drop(name: string): void {
      tenants.get(name)?.release();
      tenants.delete(name);
      // A dropped sandbox that was its own owner takes its standing along; an owner's other sandboxes keep theirs.
      standings.delete(name);
    },
    workers(): WorkerInfo[] {
      return supervisor.workers().map((worker) => ({
        pid: launcher.nodePid(worker.child),
        launchedPid: worker.pid,
        role: worker.role,
        isolation: supervisor.isDedicated(worker) ? "process-per-tenant" : "shared",
        cordon: supervisor.cordon(worker),
        tenants: [...worker.tenants],
        isolates: worker.lastIsolates,
        rssBytes: worker.rssBytes,
        retiring: worker.retiring,
        meanWorkerMs: worker.replies ? worker.workerMsTotal / worker.replies : 0,
        inFlight: worker.inFlight,
      }));
    },
    stats(): PoolStats {
      const shared = supervisor.workers().filter((worker) => !supervisor.isDedicated(worker));
      return {
        liveIsolates: live.size,
        tenants: tenants.size,
        evictions: live.evictions,
        workers: supervisor.workers().length,
        maxTenantsPerWorker,
        tenantsPerWorker: shared.map((worker) => ({ cordon: supervisor.cordon(worker), role: worker.role, tenants: worker.tenants.size })),
        workerRestarts: { ...workerRestarts },
        quarantinedTenants: [...standings.values()].filter((standing) => standing.quarantined).length,
        spareWorkerPid: supervisor.sparePid(),
      };
    },
    async close(): Promise<void> {
      live.close();
      livePools.delete(supervisor);
      await supervisor.close();
    },
  };
}
