import ivm from "isolated-vm";

/**
 * Where this worker's tenant isolates come from. Making an isolate costs about 0.8 ms of the worker's CPU, and a
 * tenant's first call after an eviction (or its first load) waits for it; so once this worker has served two
 * tenants (it is a shared worker, where new tenants keep arriving), it keeps one fresh isolate made ahead, in
 * idle time after a reply, and hands it to the next tenant that needs one. A reserved isolate has never run
 * anything and goes to exactly one tenant, so it carries nothing from anyone; it is made with the memory limit
 * of the last isolate asked for, and a tenant with another limit gets a new one. A worker that only ever serves
 * one tenant (process-per-tenant) keeps none: its next tenant is a new process.
 */
export interface IsolateReserveOptions {
  /** The startup snapshot every isolate is made from (runtime-snapshot.ts); none gives V8's own. */
  snapshot?: ivm.ExternalCopy<ArrayBuffer>;
}

export class IsolateReserve {
  private spare: { isolate: ivm.Isolate; memoryMb: number } | undefined;
  private firstTenant: string | undefined;
  private shared = false;
  private lastMemoryMb = 0;
  private refillDue = false;

  constructor(private readonly options: IsolateReserveOptions = {}) {}

  private newIsolate(memoryMb: number): ivm.Isolate {
    return new ivm.Isolate({
      memoryLimit: Math.max(8, memoryMb),
      ...(this.options.snapshot === undefined ? {} : { snapshot: this.options.snapshot }),
      // After a catastrophic V8 error the process is unreliable: die at once, the supervisor replaces us.
      onCatastrophicError: () => process.kill(process.pid, "SIGKILL"),
    });
  }

  /** A fresh isolate for `tenant` with this memory limit: the reserved one if it fits. */
  take(tenant: string, memoryMb: number): ivm.Isolate {
    this.firstTenant ??= tenant;
    if (tenant !== this.firstTenant) this.shared = true;
    this.lastMemoryMb = memoryMb;
    const spare = this.spare;
    this.spare = undefined;
    this.scheduleRefill();
    if (spare !== undefined && spare.memoryMb === memoryMb && !spare.isolate.isDisposed) return spare.isolate;
    if (spare !== undefined && !spare.isolate.isDisposed) spare.isolate.dispose();
    return this.newIsolate(memoryMb);
  }

  /** Whether an isolate is reserved now (diagnostics and tests). */
  get reserved(): boolean {
    return this.spare !== undefined;
  }

  /** After the current message is answered: the worker's reply is never held up by the refill. */
  private scheduleRefill(): void {
    if (!this.shared || this.refillDue) return;
    this.refillDue = true;
    setImmediate(() => {
      this.refillDue = false;
      if (this.spare === undefined) this.spare = { isolate: this.newIsolate(this.lastMemoryMb), memoryMb: this.lastMemoryMb };
    });
  }
}
