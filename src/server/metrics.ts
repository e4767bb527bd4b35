import type { TenantsStatus } from "./lazy-runtimes.js";
import type { HookboxEvent } from "../events/types.js";
import type { PoolStats } from "../sandbox/pool.js";
import { bundlesObtained } from "../sandbox/bundler.js";

/*
 * The server's Prometheus metrics (GET /metrics, docs/server.md "Metrics"): counters and histograms kept in
 * this process, and gauges read when scraped. Rendered in the Prometheus text exposition format 0.0.4.
 */

/** Seconds: runs take from milliseconds (a denial) to many minutes (approvals, long tool loops). */
const RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];
/** Seconds: a hook call is a sandbox round trip (sub-millisecond to its wall limit, default 5 s). */
const HOOK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

class Histogram {
  private readonly series = new Map<string, { labels: Record<string, string>; counts: number[]; sum: number; count: number }>();
  constructor(private readonly buckets: number[]) {}

  observe(labels: Record<string, string>, value: number): void {
    const key = JSON.stringify(labels);
    let entry = this.series.get(key);
    if (!entry) this.series.set(key, (entry = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    this.buckets.forEach((bound, i) => {
      if (value <= bound) entry.counts[i] += 1;
    });
    entry.sum += value;
    entry.count += 1;
  }

  render(name: string, out: string[]): void {
    for (const { labels, counts, sum, count } of this.series.values()) {
      this.buckets.forEach((bound, i) => out.push(`${name}_bucket${labelText({ ...labels, le: String(bound) })} ${counts[i]}`));
      out.push(`${name}_bucket${labelText({ ...labels, le: "+Inf" })} ${count}`);
      out.push(`${name}_sum${labelText(labels)} ${sum}`);
      out.push(`${name}_count${labelText(labels)} ${count}`);
    }
  }
}

class Counter {
  private readonly series = new Map<string, { labels: Record<string, string>; value: number }>();
  add(labels: Record<string, string>, by = 1): void {
    const key = JSON.stringify(labels);
    const entry = this.series.get(key);
    if (entry) entry.value += by;
    else this.series.set(key, { labels, value: by });
  }
  render(name: string, out: string[]): void {
    for (const { labels, value } of this.series.values()) out.push(`${name}${labelText(labels)} ${value}`);
  }
}

/** What a scrape reads at the moment it happens. */
export interface MetricGauges {
  liveRuns(): number;
  openStreams(): Map<string, number>;
  /** Bytes each configured tenant keeps in the store. */
  storeBytes(): Promise<Map<string, number>>;
  pool?(): PoolStats;
  /** The tenants' runtimes as serve builds them after listening (absent with --strict: all built before). */
  tenants?(): { status: TenantsStatus; unavailable: string[] } | undefined;
}

export class ServerMetrics {
  private readonly runsStarted = new Counter();
  private readonly runsFinished = new Counter();
  private readonly runSeconds = new Histogram(RUN_BUCKETS);
  private readonly hookSeconds = new Histogram(HOOK_BUCKETS);
  private readonly started = new Map<string, number>();

  /** Every event of a run this process runs (the session manager's observer). */
  observeEvent(tenant: string, runId: string, event: HookboxEvent): void {
    // Its run leaves this process: finished, or cut off (interrupted, resumable here or elsewhere).
    const status = event.type === "run-finished" ? event.status : event.type === "run-interrupted" ? "interrupted" : undefined;
    // A run's first event here starts its clock: run-started, or the first event of a resumed run.
    if (status === undefined && !this.started.has(runId)) {
      this.started.set(runId, performance.now());
      this.runsStarted.add({ tenant });
    }
    if (status !== undefined) {
      const startedAt = this.started.get(runId);
      this.started.delete(runId);
      this.runsFinished.add({ tenant, status });
      if (startedAt !== undefined) this.runSeconds.observe({ tenant, status }, (performance.now() - startedAt) / 1000);
    }
  }

  /** One hook call's wall time, however it ended. */
  observeHook(tenant: string, hook: string, durationMs: number): void {
    this.hookSeconds.observe({ tenant, hook }, durationMs / 1000);
  }

  async render(gauges: MetricGauges): Promise<string> {
    const out: string[] = [];
    const family = (name: string, type: string, help: string, fill: () => void) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      fill();
    };
    family("hookbox_runs_started_total", "counter", "Runs started or resumed in this process, by tenant.", () =>
      this.runsStarted.render("hookbox_runs_started_total", out),
    );
    family(
      "hookbox_runs_finished_total",
      "counter",
      "Runs that ended in this process, by tenant and status (interrupted: cut off, resumable).",
      () => this.runsFinished.render("hookbox_runs_finished_total", out),
    );
    family("hookbox_runs_live", "gauge", "Runs in flight in this process.", () => out.push(`hookbox_runs_live ${gauges.liveRuns()}`));
    family("hookbox_run_duration_seconds", "histogram", "Wall time of a run, from its start (or resume) to its final event.", () =>
      this.runSeconds.render("hookbox_run_duration_seconds", out),
    );
    family("hookbox_hook_duration_seconds", "histogram", "Wall time of one hook call (host or sandboxed), by tenant and hook.", () =>
      this.hookSeconds.render("hookbox_hook_duration_seconds", out),
    );
    const streams = gauges.openStreams();
    family("hookbox_event_streams_open", "gauge", "Server-Sent Event streams open, by tenant.", () => {
      for (const [tenant, count] of streams) out.push(`hookbox_event_streams_open${labelText({ tenant })} ${count}`);
    });
    const bytes = await gauges.storeBytes();
    family("hookbox_store_bytes", "gauge", "Bytes a tenant keeps in the store (what its maxStoreBytes quota counts).", () => {
      for (const [tenant, value] of bytes) out.push(`hookbox_store_bytes${labelText({ tenant })} ${value}`);
    });
    const tenants = gauges.tenants?.();
    if (tenants) {
      const { configured, ready, building, failed } = tenants.status;
      const states = { ready, building, failed, waiting: configured - ready - building - failed };
      family("hookbox_tenants", "gauge", "Configured tenants by the state of their runtime (built after listening).", () => {
        for (const [state, count] of Object.entries(states)) out.push(`hookbox_tenants${labelText({ state })} ${count}`);
      });
      family("hookbox_tenant_unavailable", "gauge", "1 for each tenant whose scripts, host tools or models failed to load.", () => {
        for (const tenant of tenants.unavailable) out.push(`hookbox_tenant_unavailable${labelText({ tenant })} 1`);
      });
    }
    family(
      "hookbox_script_bundles_total",
      "counter",
      "Script bundles a tenant's load took, by where from: esbuild, this process's memory, or the disk cache of an earlier start.",
      () => {
        for (const [from, count] of Object.entries(bundlesObtained()))
          out.push(`hookbox_script_bundles_total${labelText({ from })} ${count}`);
      },
    );
    const pool = gauges.pool?.();
    if (pool) {
      family("hookbox_sandbox_worker_restarts_total", "counter", "Sandbox workers lost (watchdog kills and crashes), by reason.", () => {
        for (const [reason, count] of Object.entries(pool.workerRestarts))
          out.push(`hookbox_sandbox_worker_restarts_total${labelText({ reason })} ${count}`);
      });
      family("hookbox_sandbox_quarantined_tenants", "gauge", "Tenants running apart in the quarantine worker after a breach.", () =>
        out.push(`hookbox_sandbox_quarantined_tenants ${pool.quarantinedTenants}`),
      );
      family("hookbox_sandbox_workers", "gauge", "Live sandbox worker processes.", () =>
        out.push(`hookbox_sandbox_workers ${pool.workers}`),
      );
      family("hookbox_sandbox_live_isolates", "gauge", "Tenants holding a live isolate.", () =>
        out.push(`hookbox_sandbox_live_isolates ${pool.liveIsolates}`),
      );
    }
    return `${out.join("\n")}\n`;
  }
}

/** `{a="x",b="y"}` with label values escaped as the text format asks (backslash, quote, line feed). */
function labelText(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(
    ([name, value]) => `${name}="${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`,
  );
  return parts.length ? `{${parts.join(",")}}` : "";
}
