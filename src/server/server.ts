import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { TenantRuntime } from "../host/types.js";
import type { Store } from "../store/types.js";
import { SessionManager } from "../session/manager.js";
import { createApp } from "./app.js";
import { inspectorApp, isInspectorPath } from "./inspector.js";
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
import { LiveConfig } from "./live-config.js";
import { ServerMetrics } from "./metrics.js";
import { buildTenantRuntimes } from "./tenant-runtimes.js";
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
  /** One runtime per configured tenant; built here (so a broken tenant stops the server at start) when absent. */
  runtimes?: Map<string, TenantRuntime>;
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
    return buildTenantRuntimes(next, {
      pool,
      kv: store.kv,
      onHookTimed: (tenant, hook, ms) => metrics.observeHook(tenant, hook, ms),
      ...(previous ? { previous: { config: previous.current, runtimes: previous.runtimes } } : {}),
    });
  };
  const live = new LiveConfig(config, options.runtimes ?? (await build(config)));
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
      // A stored session of a tenant no longer in the config cannot run here.
      if (!live.runtimes.has(tenant)) throw new Error(`tenant ${tenant} is not configured in ${config.file}`);
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
      live.replace(fresh, await build(fresh, live));
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
    redact,
    ...(store.cluster ? { cluster: store.cluster } : {}),
    ...(pool && deployments ? { policy: { store, pool, deployments } } : {}),
    admin: {
      metrics,
      reload,
      gauges: {
        liveRuns: () => manager.liveRunCount,
        storeBytes: async () => {
          const bytes = new Map<string, number>();
          for (const name of live.tenants.keys()) bytes.set(name, (await store.tenantUsage(name)).storedBytes);
          return bytes;
        },
        ...(pool && "stats" in pool ? { pool: () => (pool as SupervisedSandboxPool).stats() } : {}),
      },
    },
  });
  const inspector = inspectorApp();
  const connections = connectionLimits(config);
  const server: ServerType = await new Promise((resolve, reject) => {
    const instance = serve(
      {
        // The web inspector's files at /ui/ (and / sends there); everything else is the API.
        fetch: (request, env) => (isInspectorPath(new URL(request.url).pathname) ? inspector.fetch(request, env) : app.fetch(request, env)),
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
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;

  return {
    url,
    port: address.port,
    reload,
    async drain() {
      draining = true;
      retention.stop();
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
