import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { TenantRuntime } from "../host/types.js";
import type { Store } from "../store/types.js";
import { SessionManager } from "../session/manager.js";
import { createApp } from "./app.js";
import { hostPathRedactor } from "./redact.js";
import type { SandboxPool } from "../sandbox/api.js";
import { Deployments } from "../policy/deployments.js";
import type { ServerConfig } from "./config.js";
import { answerClientErrors, applyConnectionCap, connectionLimits, timeoutOptions } from "./connections.js";
import type { Server } from "node:http";

export interface RunningServer {
  url: string;
  port: number;
  /** SIGTERM behaviour: no new runs; in-flight runs get `drainMs` to finish, then are committed as interrupted. */
  drain(): Promise<void>;
}

export interface StartServerOptions {
  config: ServerConfig;
  store: Store;
  /** One runtime per configured tenant, built up front so a broken tenant stops the server at start. */
  runtimes: Map<string, TenantRuntime>;
  port: number;
  host?: string;
  /** The sandbox pool the runtimes use: with it, the policy lifecycle routes are served (versions, deployments, replays). */
  pool?: SandboxPool;
}

export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config, store, runtimes, pool } = options;
  const quotas = new Map(config.tenants.map((tenant) => [tenant.config.name, tenant.maxStoreBytes]));
  const deployments =
    pool &&
    new Deployments({
      store,
      pool,
      tenants: new Map(config.tenants.map((tenant) => [tenant.config.name, tenant.config])),
      configRuntimes: runtimes,
    });
  const manager = new SessionManager({
    store,
    runtimeFor: async (tenant, _session, run) => {
      // A stored session of a tenant no longer in the config cannot run here.
      if (!runtimes.has(tenant)) throw new Error(`tenant ${tenant} is not configured in ${config.file}`);
      return deployments ? deployments.runtimeFor(tenant, run) : runtimes.get(tenant)!;
    },
    storeQuota: (tenant) => quotas.get(tenant),
  });
  let draining = false;
  const redact = hostPathRedactor({ storeLocation: store.location, configFile: config.file });
  const app = createApp({
    config,
    manager,
    draining: () => draining,
    redact,
    ...(pool && deployments ? { policy: { store, pool, deployments } } : {}),
  });
  const connections = connectionLimits(config);
  const server: ServerType = await new Promise((resolve, reject) => {
    const instance = serve(
      { fetch: app.fetch, port: options.port, hostname: options.host ?? config.host, serverOptions: timeoutOptions(connections) },
      () => resolve(instance),
    );
    instance.once("error", reject);
  });
  applyConnectionCap(server as Server, connections);
  answerClientErrors(server as Server);
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;

  return {
    url,
    port: address.port,
    async drain() {
      draining = true;
      await manager.waitForIdle(config.drainMs);
      await manager.interruptAll(
        "the server shut down (SIGTERM) while the run was in flight; resume it with hookbox resume or POST /v1/sessions/:id/resume",
      );
      // Streams of interrupted runs have ended; give their last bytes a moment, then close what is left.
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        setTimeout(() => (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.(), 200).unref();
      });
    },
  };
}
