import { HookboxError } from "../errors.js";
import type { TenantRuntime } from "../host/types.js";
import type { ConfigRuntimes } from "../policy/deployments.js";
import type { BackgroundTurns } from "./background-turns.js";

/*
 * The tenants' runtimes of `hookbox serve` (docs/server.md, "Start-up"). The server listens first; then each
 * tenant's runtime (its scripts bundled and loaded, its host tools, its models) is built in the background, one
 * after another in config order, each in its turn (background-turns.ts: requests come first), and on a tenant's
 * first request ahead of that queue. A tenant whose runtime
 * does not build answers its own requests with TENANT_UNAVAILABLE (503, naming what failed) and is tried again
 * on a request once `retryAfterMs` has passed (a script fixed on disk comes back without a restart); the other
 * tenants are served meanwhile. `buildAll` is the strict start: every tenant built, or the first failure.
 */

export interface LazyRuntimesOptions {
  /** The configured tenants, in config order. */
  tenants: readonly string[];
  build(tenant: string): Promise<TenantRuntime>;
  /** Told each failed build, once per failure (the server logs it). */
  onFailure?(tenant: string, error: Error): void;
  /** How long a failed tenant answers with its failure before a request tries again, ms (default 30000). */
  retryAfterMs?: number;
  /** A runtime a tenant already has, built or being built (a reload keeps those of tenants whose config is unchanged). */
  kept?(tenant: string): TenantRuntime | Promise<TenantRuntime> | undefined;
  /** When each background build may start (default: one right after another). */
  turns?: Pick<BackgroundTurns, "step">;
  /**
   * Told each tenant the background built, before any request needed it: what its runtime holds for a run to use
   * at once (its isolate) may go until a request comes.
   */
  builtAhead?(tenant: string): void;
}

type State =
  | { kind: "waiting" }
  | { kind: "building"; runtime: Promise<TenantRuntime> }
  | { kind: "ready"; runtime: TenantRuntime }
  | { kind: "failed"; error: Error; at: number };

/** How many of the configured tenants are ready, being built, failed (and so waiting: the rest). */
export interface TenantsStatus {
  configured: number;
  ready: number;
  building: number;
  failed: number;
}

export class LazyRuntimes implements ConfigRuntimes {
  private readonly states = new Map<string, State>();
  /** The tenant the background builds now, and whether a request waits for it too (its runtime is then kept whole). */
  private ahead: { tenant: string; wanted: boolean } | undefined;
  private readonly retryAfterMs: number;
  private warming = false;
  private stopped = false;

  constructor(private readonly options: LazyRuntimesOptions) {
    this.retryAfterMs = options.retryAfterMs ?? 30_000;
    for (const tenant of options.tenants) {
      const kept = options.kept?.(tenant);
      if (kept instanceof Promise) this.follow(tenant, kept);
      else this.states.set(tenant, kept ? { kind: "ready", runtime: kept } : { kind: "waiting" });
    }
  }

  /** The tenant's runtime if it is built or being built, without starting a build. */
  peek(tenant: string): TenantRuntime | Promise<TenantRuntime> | undefined {
    const state = this.states.get(tenant);
    return state?.kind === "ready" || state?.kind === "building" ? state.runtime : undefined;
  }

  has(tenant: string): boolean {
    return this.states.has(tenant);
  }

  /** The tenant's runtime, built now if it is not yet; TENANT_UNAVAILABLE while its last build's failure stands. */
  async get(tenant: string): Promise<TenantRuntime> {
    const state = this.states.get(tenant);
    if (!state) throw new HookboxError("CONFIG", `tenant ${tenant} is not configured`);
    if (state.kind === "ready") return state.runtime;
    if (state.kind === "building") {
      if (this.ahead?.tenant === tenant) this.ahead.wanted = true;
      return this.awaitBuild(tenant, state.runtime);
    }
    if (state.kind === "failed" && Date.now() - state.at < this.retryAfterMs) throw this.unavailableError(tenant, state);
    return this.awaitBuild(tenant, this.start(tenant));
  }

  /** Builds every tenant not yet built, one after another, in the background, each in its turn (`turns`). */
  warmAll(): void {
    if (this.warming) return;
    this.warming = true;
    const turns = this.options.turns ?? { step: (work: () => Promise<void>) => work() };
    void (async () => {
      for (const tenant of this.options.tenants) {
        if (this.stopped) return;
        const state = this.states.get(tenant)!;
        if (state.kind === "building") await state.runtime.catch(() => undefined);
        if (state.kind !== "waiting") continue;
        await turns.step(async () => {
          // A request may have started it meanwhile, or a reload stopped this queue.
          if (this.stopped || this.states.get(tenant)!.kind !== "waiting") return;
          this.ahead = { tenant, wanted: false };
          const built = await this.start(tenant).then(
            () => true,
            () => false,
          );
          if (built && !this.stopped && !this.ahead?.wanted) this.options.builtAhead?.(tenant);
          this.ahead = undefined;
        });
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
  }

  /** Builds every tenant; rejects with the first failure as its build threw it (`hookbox serve --strict`). */
  async buildAll(): Promise<void> {
    for (const tenant of this.options.tenants) {
      const state = this.states.get(tenant)!;
      if (state.kind === "ready") continue;
      await (state.kind === "building" ? state.runtime : this.start(tenant));
    }
  }

  /** Stops the background builds (a build in progress finishes). */
  stop(): void {
    this.stopped = true;
  }

  status(): TenantsStatus {
    const status = { configured: this.states.size, ready: 0, building: 0, failed: 0 };
    for (const state of this.states.values()) {
      if (state.kind === "ready") status.ready++;
      else if (state.kind === "building") status.building++;
      else if (state.kind === "failed") status.failed++;
    }
    return status;
  }

  /** The tenants whose last build failed. */
  unavailable(): string[] {
    return [...this.states].filter(([, state]) => state.kind === "failed").map(([tenant]) => tenant);
  }

  private start(tenant: string): Promise<TenantRuntime> {
    return this.follow(tenant, this.options.build(tenant));
  }

  private follow(tenant: string, runtime: Promise<TenantRuntime>): Promise<TenantRuntime> {
    this.states.set(tenant, { kind: "building", runtime });
    runtime.then(
      (built) => this.states.set(tenant, { kind: "ready", runtime: built }),
      (error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        this.states.set(tenant, { kind: "failed", error: failure, at: Date.now() });
        this.options.onFailure?.(tenant, failure);
      },
    );
    return runtime;
  }

  private async awaitBuild(tenant: string, runtime: Promise<TenantRuntime>): Promise<TenantRuntime> {
    try {
      return await runtime;
    } catch {
      const state = this.states.get(tenant)!;
      throw state.kind === "failed"
        ? this.unavailableError(tenant, state)
        : new HookboxError("TENANT_UNAVAILABLE", `tenant ${tenant} failed to load`);
    }
  }

  private unavailableError(tenant: string, state: { error: Error; at: number }): HookboxError {
    const retryAfterMs = Math.max(0, state.at + this.retryAfterMs - Date.now());
    return new HookboxError("TENANT_UNAVAILABLE", `tenant ${tenant} is unavailable: it failed to load: ${state.error.message}`, {
      tenant,
      retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)),
    });
  }
}
