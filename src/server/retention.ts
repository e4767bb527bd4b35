import { HookboxError } from "../errors.js";
import type { SessionManager } from "../session/manager.js";
import type { LiveConfig } from "./live-config.js";

/*
 * Retention (a tenant's `retention: {runsDays}`): a session whose latest run started more than runsDays ago (or,
 * without runs, that was created then) is deleted with everything of it, freeing its bytes of the tenant's store
 * quota. Whole sessions, not single runs: every run of a session continues the turns of the ones before it. A
 * session with a run in flight, or with forks that keep their history in it, is left for a later sweep.
 */

const DAY_MS = 24 * 60 * 60 * 1000;
/** Sessions one sweep deletes per tenant at most: a backlog is worked off over several sweeps. */
const MAX_PER_SWEEP = 1000;
const BATCH = 100;

export interface SweepResult {
  deleted: number;
  freedBytes: number;
}

export class RetentionSweeper {
  private timer: NodeJS.Timeout | undefined;
  /** Bumped by start and stop, so a sweep that ends after them does not schedule the next one of an old plan. */
  private plan = 0;
  private sweeping: Promise<SweepResult> | undefined;

  constructor(
    private readonly live: LiveConfig,
    private readonly manager: SessionManager,
    private readonly onError: (message: string) => void,
  ) {}

  /** Sweeps now, then again every tenth of the shortest retention (at least 1 s apart, at most 1 h). */
  start(): void {
    this.stop();
    const days = [...this.live.tenants.values()].flatMap((tenant) => (tenant.retentionDays === undefined ? [] : [tenant.retentionDays]));
    if (days.length === 0) return;
    const everyMs = Math.min(Math.max((Math.min(...days) * DAY_MS) / 10, 1000), 60 * 60 * 1000);
    const plan = this.plan;
    const tick = () => {
      void this.sweep().finally(() => {
        if (plan === this.plan) this.timer = setTimeout(tick, everyMs).unref();
      });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  stop(): void {
    this.plan += 1;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One pass over every tenant with a retention (one at a time: a second call waits for the running one). */
  sweep(nowMs = Date.now()): Promise<SweepResult> {
    this.sweeping ??= this.sweepTenants(nowMs).finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async sweepTenants(nowMs: number): Promise<SweepResult> {
    const result: SweepResult = { deleted: 0, freedBytes: 0 };
    for (const [name, tenant] of this.live.tenants) {
      if (tenant.retentionDays === undefined) continue;
      try {
        await this.sweepTenant(name, nowMs - tenant.retentionDays * DAY_MS, result);
      } catch (error) {
        this.onError(`retention of tenant ${name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return result;
  }

  private async sweepTenant(tenant: string, beforeMs: number, result: SweepResult): Promise<void> {
    const kept = new Set<string>();
    for (let seen = 0; seen < MAX_PER_SWEEP;) {
      const stale = (await this.manager.store.staleSessions(tenant, beforeMs, BATCH + kept.size)).filter((id) => !kept.has(id));
      if (stale.length === 0) return;
      for (const sessionId of stale) {
        seen += 1;
        try {
          const { freedBytes } = await this.manager.delete(sessionId);
          result.deleted += 1;
          result.freedBytes += freedBytes;
        } catch (error) {
          // Busy or forked now: kept for a later sweep; anything else is the store's fault, reported by the caller.
          if (!(error instanceof HookboxError && (error.code === "SESSION_BUSY" || error.code === "SESSION_FORKED"))) throw error;
          kept.add(sessionId);
        }
      }
    }
  }
}
