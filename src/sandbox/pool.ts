import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits, type SandboxPool, type TenantSandbox } from "./api.js";
import { defaultWorkerPath } from "./paths.js";
import { Supervisor } from "./supervisor.js";
import { TenantSandboxImpl } from "./tenant-sandbox.js";

export interface SandboxPoolOptions {
  /** Sandbox worker processes for tenants in good standing (default 2). A quarantine worker comes on top. */
  workers?: number;
  /** A worker whose RSS exceeds this after a call is retired and replaced (default 1024 MB). */
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
}

export interface WorkerInfo {
  pid: number | undefined;
  role: "normal" | "quarantine";
  tenants: string[];
  rssBytes: number;
  retiring: boolean;
  /** Mean time the worker spent per run message, ms (diagnostics). */
  meanWorkerMs: number;
}

export interface SupervisedSandboxPool extends SandboxPool {
  /** The live worker processes (for diagnostics and fault tests). */
  workers(): WorkerInfo[];
}

const livePools = new Set<Supervisor>();
let exitHookInstalled = false;

/** Kills our workers if the host exits without closing its pools (the workers also watch their parent). */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const supervisor of livePools) for (const worker of supervisor.workers()) worker.child.kill("SIGKILL");
  });
}

export function createSandboxPool(options: SandboxPoolOptions = {}): SupervisedSandboxPool {
  const tenants = new Map<string, TenantSandboxImpl>();
  const supervisor = new Supervisor({
    workerPath: options.workerPath ?? defaultWorkerPath(),
    workers: options.workers ?? 2,
    graceMs: options.killGraceMs ?? 500,
    rssBudgetBytes: (options.workerRssBudgetMb ?? 1024) * 1048576,
    onWorkerLost: (worker, exit) => {
      for (const tenant of tenants.values()) tenant.onWorkerLost(worker, exit);
    },
    onWorkerRetiring: (worker) => {
      for (const tenant of tenants.values()) tenant.onWorkerRetiring(worker);
    },
  });
  livePools.add(supervisor);
  installExitHook();
  if (options.prewarm) supervisor.prewarm();
  const tenantOptions = {
    supervisor,
    maxQueueDepth: options.maxQueueDepth ?? 256,
    maxNestingDepth: options.maxNestingDepth ?? 32,
    maxPayloadBytes: options.maxPayloadBytes ?? 8 * 1048576,
    maxLogChars: options.maxLogChars ?? 4096,
    logsPerSecond: options.logsPerSecond ?? 100,
  };
  return {
    tenant(name: string, limits?: Partial<SandboxLimits>): TenantSandbox {
      let tenant = tenants.get(name);
      if (tenant === undefined) {
        tenant = new TenantSandboxImpl(name, { ...DEFAULT_SANDBOX_LIMITS, ...limits }, tenantOptions);
        tenants.set(name, tenant);
      } else if (limits !== undefined) {
        tenant.limits = { ...tenant.limits, ...limits };
      }
      return tenant;
    },
    drop(name: string): void {
      tenants.get(name)?.release();
      tenants.delete(name);
    },
    workers(): WorkerInfo[] {
      return supervisor.workers().map((worker) => ({
        pid: worker.pid,
        role: worker.role,
        tenants: [...worker.tenants],
        rssBytes: worker.lastRssBytes,
        retiring: worker.retiring,
        meanWorkerMs: worker.replies ? worker.workerMsTotal / worker.replies : 0,
      }));
    },
    async close(): Promise<void> {
      livePools.delete(supervisor);
      await supervisor.close();
    },
  };
}
