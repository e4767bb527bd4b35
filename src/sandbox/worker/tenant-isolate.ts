import type ivm from "isolated-vm";
import type { WorkerLimits } from "../wire/protocol.js";
import type { CodeCache } from "./code-cache.js";
import { Failure } from "./failure.js";
import type { IsolateReserve } from "./isolate-reserve.js";

export interface TenantIsolateOptions {
  code: CodeCache;
  runtimeHash: string;
  /** Where fresh isolates come from (one may be made ahead). */
  isolates: IsolateReserve;
}

/**
 * One tenant's isolate in this worker (memory limit per tenant), its compiled scripts and the contexts
 * of its open runs. When the isolate dies (memory limit), everything here is dropped and rebuilt lazily.
 */
export class TenantIsolate {
  private isolate: ivm.Isolate | undefined;
  private memoryMb = 0;
  private runtime: ivm.Script | undefined;
  private readonly scripts = new Map<string, ivm.Script>();
  /** runId -> script name -> context. */
  readonly runs = new Map<string, Map<string, { release(): void }>>();

  private readonly code: CodeCache;

  constructor(
    readonly name: string,
    private readonly options: TenantIsolateOptions,
  ) {
    this.code = options.code;
  }

  /** Makes sure an isolate with this memory limit exists. */
  prepare(limits: WorkerLimits): void {
    if (this.isolate !== undefined && !this.isolate.isDisposed && this.memoryMb === limits.memoryMb) return;
    this.dispose();
    this.memoryMb = limits.memoryMb;
    this.isolate = this.options.isolates.take(this.name, limits.memoryMb);
  }

  requireIsolate(): ivm.Isolate {
    if (this.isolate === undefined || this.isolate.isDisposed)
      throw new Failure("SANDBOX_CRASHED", `tenant ${this.name}: isolate is not available`);
    return this.isolate;
  }

  isolateLost(): boolean {
    return this.isolate === undefined || this.isolate.isDisposed;
  }

  cpuTimeNs(): bigint {
    try {
      return this.isolate?.cpuTime ?? 0n;
    } catch {
      return 0n;
    }
  }

  memoryFailure(what: string): Failure {
    this.dispose();
    return new Failure(
      "SANDBOX_MEMORY",
      `${what} exceeded the tenant's memory limit of ${this.memoryMb} MB; the tenant's isolate was recycled`,
      {
        limitMb: this.memoryMb,
      },
    );
  }

  runtimeScript(): ivm.Script {
    this.runtime ??= this.code.compile(this.requireIsolate(), this.options.runtimeHash);
    return this.runtime;
  }

  bundleScript(hash: string): ivm.Script {
    let script = this.scripts.get(hash);
    if (script === undefined) {
      script = this.code.compile(this.requireIsolate(), hash);
      this.scripts.set(hash, script);
    }
    return script;
  }

  closeRun(runId: string): void {
    const contexts = this.runs.get(runId);
    if (contexts === undefined) return;
    this.runs.delete(runId);
    for (const context of contexts.values()) context.release();
  }

  dispose(): void {
    this.runs.clear();
    this.scripts.clear();
    this.runtime = undefined;
    const isolate = this.isolate;
    this.isolate = undefined;
    if (isolate !== undefined && !isolate.isDisposed) {
      try {
        isolate.dispose();
      } catch {
        // already disposed by the memory limit
      }
    }
  }
}
