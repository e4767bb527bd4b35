import ivm from "isolated-vm";
import type { WorkerLimits } from "../wire/protocol.js";
import type { GuestOpHandler, RuntimeOpCall } from "../wire/guest-ops.js";
import { Failure, isTimeoutError } from "./failure.js";
import type { TenantIsolate } from "./tenant-isolate.js";

/**
 * One fresh context for one script in one run (or for a load): the runtime is installed first, then the
 * script's bundle is evaluated and registered. The dispatcher reference stays here, in the worker.
 */
export class ScriptContext {
  private constructor(
    readonly tenant: TenantIsolate,
    readonly runId: string,
    readonly script: string,
    private readonly context: ivm.Context,
    readonly dispatcher: ivm.Reference<(...args: unknown[]) => unknown>,
    /** Raw `{ok, manifest|error}` text from registering the bundle (a run's context: `{ok|error}`, no manifest). */
    readonly registration: string,
  ) {}

  static create(options: {
    tenant: TenantIsolate;
    runId: string;
    script: string;
    bundleHash: string;
    limits: WorkerLimits;
    channel: (context: () => ScriptContext | undefined) => GuestOpHandler;
  }): ScriptContext {
    const { tenant, limits } = options;
    const isolate = tenant.requireIsolate();
    const context = isolate.createContextSync();
    let self: ScriptContext | undefined;
    try {
      const install = tenant.runtimeScript().runSync(context, { reference: true }) as ivm.Reference<(...args: unknown[]) => unknown>;
      const runtimeLimits = JSON.stringify({ maxPayloadBytes: limits.maxPayloadBytes, maxLogChars: limits.maxLogChars });
      const dispatcher = install.applySync(undefined, [new ivm.Callback(options.channel(() => self)), runtimeLimits], {
        result: { reference: true },
      }) as unknown as ivm.Reference<(...args: unknown[]) => unknown>;
      install.release();
      const factory = tenant.bundleScript(options.bundleHash).runSync(context, { reference: true }) as ivm.Reference<unknown>;
      // Top-level script code runs here, bounded like a callback.
      const timeout = Math.max(1, Math.min(limits.cpuMs, limits.wallMs));
      let registration: string;
      try {
        const forRun = options.runId !== "";
        registration = dispatcher.applySync(undefined, ["register", factory.derefInto(), forRun] satisfies RuntimeOpCall, {
          timeout,
        }) as string;
      } catch (error) {
        if (tenant.isolateLost()) throw tenant.memoryFailure(`${options.script}: top-level code`);
        if (isTimeoutError(error)) {
          throw new Failure("SANDBOX_TIMEOUT", `${options.script}: top-level code exceeded its time limit of ${timeout} ms`, {
            script: options.script,
            limitMs: timeout,
          });
        }
        throw error;
      } finally {
        factory.release();
      }
      self = new ScriptContext(tenant, options.runId, options.script, context, dispatcher, registration);
      return self;
    } catch (error) {
      if (!tenant.isolateLost()) context.release();
      throw error;
    }
  }

  release(): void {
    if (this.tenant.isolateLost()) return;
    try {
      this.dispatcher.release();
      this.context.release();
    } catch {
      // The isolate may already be gone; nothing left to free.
    }
  }
}
