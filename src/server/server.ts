import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { TenantRuntime } from "../host/types.js";
import type { Store } from "../store/types.js";
import { SessionManager } from "../session/manager.js";
import { createApp } from "./app.js";
import { hrefPath, inspectorApp, isInspectorPath } from "./inspector.js";
import { hostPathRedactor } from "./redact.js";
import type { SandboxPool } from "../sandbox/api.js";
import type { SupervisedSandboxPool } from "../sandbox/pool.js";
import { Deployments } from "../policy/deployments.js";
import type { ServerConfig } from "./config.js";
import { answerClientErrors, applyConnectionCap, connectionLimits, timeoutOptions } from "./connections.js";
import type { Server } from "node:http";
import { ClusterNode } from "./cluster-node.js";
import { HookboxError } from "../errors.js";
import { loadServerConfig } from "./config.js";
import { LiveConfig, tenantRemoved } from "./live-config.js";
import { ServerMetrics } from "./metrics.js";
import { buildTenantRuntime, buildTenantRuntimes, checkTenantSecrets, unchangedTenants } from "./tenant-runtimes.js";
import { LazyRuntimes } from "./lazy-runtimes.js";
import { BackgroundTurns } from "./background-turns.js";
import { RetentionSweeper } from "./retention.js";

export interface RunningServer {
  url: string;
  port: number;
  /** SIGTERM behaviour: no new runs; in-flight runs get `drainMs` to finish, then are committed as interrupted. */
  drain(): Promise<void>;
  /**
   * Re-reads the config file (SIGHUP, POST /v1/admin/reload): new tenants, rotated keys, changed limits take
   * effect for the next request; runs in flight go on. A refused config (CONFIG error) leaves the old one serving.
   */
  reload(): Promise<{ tenants: string[] }>;
}

export interface StartServerOptions {
  config: ServerConfig;
  store: Store;
  /** One runtime per configured tenant, built by the caller; absent, they are built here (see `strict`). */
  runtimes?: ReadonlyMap<string, TenantRuntime>;
  /**
   * Build every tenant's runtime before listening, and at a reload before taking the new config: a broken tenant
   * stops the start (or refuses the reload). Default false: runtimes are built after listening, in the
   * background and on a tenant's first use (src/server/lazy-runtimes.ts, docs/server.md "Start-up").
   */
  strict?: boolean;
  port: number;
  host?: string;
  /** The sandbox pool the runtimes use: with it, the policy lifecycle routes are served (versions, deployments, replays). */
  pool?: SandboxPool;
}

export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config, store, pool } = options;
  const metrics = new ServerMetrics();
  const build = (next: ServerConfig, previous?: LiveConfig) => {
    if (!pool) throw new HookboxError("CONFIG", "this server was started without a sandbox pool: it cannot build tenants");
    // A strict server's runtimes are always a Map (built here, or given).
    const runtimes = previous?.runtimeSource as ReadonlyMap<string, TenantRuntime> | undefined;
    return buildTenantRuntimes(next, {
      pool,
      kv: store.kv,
      onHookTimed: (tenant, hook, ms) => metrics.observeHook(tenant, hook, ms),
      ...(previous && runtimes ? { previous: { config: previous.current, runtimes } } : {}),
    });
  };
  const strict = options.strict ?? false;
  // Without --strict: the runtimes of the config in force, built after listening (a reload makes new ones), each
  // build in its turn: requests first, and a tenant built ahead of its first request holds no isolate until then.
  let lazy: LazyRuntimes | undefined;
  const turns = new BackgroundTurns({ runsInFlight: () => manager.liveRunCount });
  const supervised = pool && "evictIfIdle" in pool ? (pool as SupervisedSandboxPool) : undefined;
  const lazyFor = (next: ServerConfig, previous?: LiveConfig): LazyRuntimes => {
    if (!pool) throw new HookboxError("CONFIG", "this server was started without a sandbox pool: it cannot build tenants");
    const unchanged = previous ? unchangedTenants(previous.current, next) : new Set<string>();
    const before = previous?.runtimeSource;
    const runtimes = new LazyRuntimes({
      tenants: next.tenants.map((tenant) => tenant.config.name),
      build: (name) =>
        buildTenantRuntime(next, name, { pool, kv: store.kv, onHookTimed: (tenant, hook, ms) => metrics.observeHook(tenant, hook, ms) }),
      kept: (name) => (unchanged.has(name) ? (before instanceof LazyRuntimes ? before.peek(name) : before?.get(name)) : undefined),
      turns,
      ...(supervised ? { builtAhead: (name: string) => void supervised.evictIfIdle(name) } : {}),
      onFailure: (tenant, error) =>
        process.stderr.write(
          `hookbox serve: tenant ${tenant} is unavailable (its runs answer 503 TENANT_UNAVAILABLE until it loads): ${error.message}\n`,
        ),
    });
    if (before instanceof LazyRuntimes) before.stop();
    return runtimes;
  };
  const live = new LiveConfig(config, options.runtimes ?? (strict ? await build(config) : (lazy = lazyFor(config))));
  const deployments =
    pool &&
    new Deployments({
      store,
      pool,
      tenants: live.tenantConfigs,
      configRuntimes: live.runtimes,
    });
  const manager = new SessionManager({
    store,
    runtimeFor: async (tenant, _session, run) => {
      // A stored session of a tenant no longer in the config cannot run here (a reload removed it meanwhile).
      if (!live.runtimes.has(tenant)) throw tenantRemoved(tenant, "a reload removed it, or this server was never configured for it");
      return deployments ? deployments.runtimeFor(tenant, run) : live.runtimes.get(tenant)!;
    },
    storeQuota: (tenant) => live.tenants.get(tenant)?.maxStoreBytes,
    onEvent: (tenant, runId, event) => metrics.observeEvent(tenant, runId, event),
  });
  const retention = new RetentionSweeper(live, manager, (message) => process.stderr.write(`hookbox serve: ${message}\n`));
  let draining = false;
  // On a shared (PostgreSQL) store: this node renews its runs' leases, answers controls, takes over dead nodes' runs.
  const node = store.cluster && new ClusterNode({ manager, cluster: store.cluster, draining: () => draining });
  // One reload at a time: a second waits for the first, then reads the file again.
  let reloading: Promise<unknown> = Promise.resolve();
  const reload = () => {
    const next = reloading.then(async () => {
      const fresh = loadServerConfig(config.file);
      checkTenantSecrets(fresh);
      if (strict) live.replace(fresh, await build(fresh, live));
      else {
        lazy = lazyFor(fresh, live);
        live.replace(fresh, lazy);
        lazy.warmAll();
      }
      if (!draining) retention.start();
      return { tenants: fresh.tenants.map((tenant) => tenant.config.name) };
    });
    reloading = next.catch(() => undefined);
    return next;
  };
  const redact = hostPathRedactor({ storeLocation: store.location, configFile: config.file });
  const app = createApp({
    config,
    live,
    manager,
    draining: () => draining,
    ...(strict ? {} : { tenantsStatus: () => lazy?.status() }),
    redact,
    ...(store.cluster ? { cluster: store.cluster } : {}),
    ...(pool && deployments ? { policy: { store, pool, deployments } } : {}),
    admin: {
      metrics,
      reload,
      gauges: {
        liveRuns: () => manager.liveRunCount,
        // One read of the per-tenant counters, whatever the store holds; a configured tenant that stored nothing yet is 0.
        storeBytes: async () => {
          const stored = await store.storedBytesByTenant();
          return new Map([...live.tenants.keys()].map((name) => [name, stored.get(name) ?? 0]));
        },
        ...(pool && "stats" in pool ? { pool: () => (pool as SupervisedSandboxPool).stats() } : {}),
        tenants: () => lazy && { status: lazy.status(), unavailable: lazy.unavailable() },
      },
    },
  });
  const inspector = inspectorApp();
  const connections = connectionLimits(config);
  const server: ServerType = await new Promise((resolve, reject) => {
    const instance = serve(
      {
        // The web inspector's files at /ui/ (and / sends there); everything else is the API.
        fetch: (request, env) =>
          turns.during(() => (isInspectorPath(hrefPath(request.url)) ? inspector.fetch(request, env) : app.fetch(request, env))),
        port: options.port,
        hostname: options.host ?? config.host,
        serverOptions: timeoutOptions(connections),
      },
      () => resolve(instance),
    );
    instance.once("error", reject);
  });
  applyConnectionCap(server as Server, connections);
  answerClientErrors(server as Server);
  retention.start();
  lazy?.warmAll();
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;

  return {
    url,
    port: address.port,
    reload,
    async drain() {
      draining = true;
      retention.stop();
      lazy?.stop();
      await manager.waitForIdle(config.drainMs);
      await manager.interruptAll(
        "the server shut down (SIGTERM) while the run was in flight; resume it with hookbox resume or POST /v1/sessions/:id/resume",
      );
      node?.stop();
      // Streams of interrupted runs have ended; give their last bytes a moment, then close what is left.
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        setTimeout(() => (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.(), 200).unref();
      });
    },
  };
}
