import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { HookboxError } from "../../errors.js";
import { createSandboxPool } from "../../sandbox/index.js";
import { openStoreAt } from "../../store/index.js";
import { loadServerConfig } from "../../server/config.js";
import { isDescriptorExhaustion } from "../../server/connections.js";
import { startServer } from "../../server/server.js";
import { checkTenantSecrets } from "../../server/tenant-runtimes.js";
import { failUsage } from "../exit.js";
import { wallModeFlag, type WallMode } from "../../sandbox/wall/mode.js";
import { useScriptCache } from "../../sandbox/bundler.js";
import { defaultScriptCacheDir, ScriptCache } from "../../sandbox/script-cache.js";

const usage =
  "usage: hookbox serve --port N [--store FILE|URL] --config FILE [--host ADDRESS] [--wall auto|required|none] [--strict] [--script-cache DIR|none] (--store or the config's store)";

/**
 * `hookbox serve`: the multi-tenant HTTP server. Prints `listening on URL` on stdout once it accepts requests,
 * which is before the tenants' runtimes are built (docs/server.md, "Start-up"); with --strict, after all of them.
 */
export async function serveCommand(argv: string[]): Promise<number> {
  let flags: ServeFlags;
  try {
    flags = parseServeFlags(argv);
  } catch (error) {
    return failUsage("serve", error);
  }
  let config;
  try {
    config = loadServerConfig(flags.config);
    // What the config says is checked before anything starts, the secrets of egress headers included; the
    // tenants' scripts, host tools and models load after listening (or, with --strict, before).
    checkTenantSecrets(config);
  } catch (error) {
    return failUsage("serve", error);
  }
  // Bundles kept by an earlier start are reused; a directory that cannot serve (another user's, writable by
  // others) is reported and the server bundles as if it had none.
  const cacheDir = flags.scriptCache ?? config.scriptCache ?? defaultScriptCacheDir();
  if (cacheDir !== false) {
    const cache = ScriptCache.open(cacheDir);
    if (cache instanceof ScriptCache) useScriptCache(cache);
    else process.stderr.write(`hookbox serve: no script cache (bundles are built at every start): ${cache.problem}\n`);
  }
  let store;
  try {
    const where = flags.store ?? config.store;
    if (!where) throw new HookboxError("USAGE", `--store is required when the config has no "store" (${usage})`);
    store = await openStoreAt(where, {
      ...(config.leaseMs !== undefined ? { leaseMs: config.leaseMs } : {}),
      ...(config.node !== undefined ? { node: config.node } : {}),
    });
  } catch (error) {
    return failUsage("serve", error);
  }
  let pool;
  try {
    pool = createSandboxPool({
      wall: flags.wall ?? config.wall,
      ...(config.idleMs !== undefined ? { idleMs: config.idleMs } : {}),
      ...(config.maxLiveIsolates !== undefined ? { maxLiveIsolates: config.maxLiveIsolates } : {}),
      ...(config.maxTenantsPerWorker !== undefined ? { maxTenantsPerWorker: config.maxTenantsPerWorker } : {}),
    });
  } catch (error) {
    await store.close();
    return failUsage("serve", error);
  }
  const shutdown = async () => {
    await pool.close();
    await store.close();
  };
  let server;
  try {
    // With --strict, builds every tenant's runtime first: a broken tenant stops the server here, naming it.
    server = await startServer({
      config,
      store,
      pool,
      port: flags.port,
      strict: flags.strict,
      ...(flags.host ? { host: flags.host } : {}),
    });
  } catch (error) {
    await shutdown();
    return failUsage("serve", error);
  }
  process.stdout.write(`hookbox serve: listening on ${server.url}\n`);
  // The last net: each run's promise chain handles its own failures (src/session/live-runs.ts), so a rejection
  // that still escapes is a host bug. It is logged, once, and the server goes on serving every tenant.
  const onStrayRejection = (reason: unknown) =>
    process.stderr.write(
      `hookbox serve: unhandled rejection (a host bug; the server keeps running): ${(reason as Error)?.stack ?? String(reason)}\n`,
    );
  process.on("unhandledRejection", onStrayRejection);

  // SIGHUP re-reads the config; a refused one is reported and the old one keeps serving.
  const running = server;
  const onHangup = () =>
    void running.reload().then(
      ({ tenants }) => process.stderr.write(`hookbox serve: SIGHUP: config reloaded (${tenants.length} tenants: ${tenants.join(", ")})\n`),
      (error: Error) =>
        process.stderr.write(
          isDescriptorExhaustion(error)
            ? `hookbox serve: SIGHUP: the config was not reloaded: the server is out of file descriptors (${error.message}); the old one stays\n`
            : `hookbox serve: SIGHUP: the new config was refused; the old one stays: ${error.message}\n`,
        ),
    );
  process.on("SIGHUP", onHangup);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  process.stderr.write(
    `hookbox serve: ${signal}: draining (no new runs; in-flight runs finish within ${config.drainMs} ms or are committed as interrupted)\n`,
  );
  await server.drain();
  await shutdown();
  process.off("unhandledRejection", onStrayRejection);
  process.off("SIGHUP", onHangup);
  process.stderr.write("hookbox serve: stopped\n");
  return 0;
}

interface ServeFlags {
  port: number;
  store?: string;
  config: string;
  host?: string;
  /** Overrides the config's server.wall. */
  wall?: WallMode;
  /** Every tenant's runtime is built before listening (and at a reload, before it is taken); the first that fails stops it. */
  strict: boolean;
  /** Overrides the config's server.scriptCache ("none": false). */
  scriptCache?: string | false;
}

function parseServeFlags(argv: string[]): ServeFlags {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: "string" },
        store: { type: "string" },
        config: { type: "string" },
        host: { type: "string" },
        wall: { type: "string" },
        strict: { type: "boolean" },
        "script-cache": { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new HookboxError("USAGE", `${(error as Error).message}\n${usage}`);
  }
  for (const name of ["port", "config"] as const) {
    if (!values[name]) throw new HookboxError("USAGE", `--${name} is required (${usage})`);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new HookboxError("USAGE", `--port ${values.port}: expected an integer from 0 to 65535`);
  return {
    port,
    ...(values.store ? { store: values.store } : {}),
    config: values.config!,
    ...(values.host ? { host: values.host } : {}),
    wall: wallModeFlag(values.wall),
    strict: values.strict === true,
    ...(values["script-cache"] ? { scriptCache: values["script-cache"] === "none" ? false : resolve(values["script-cache"]) } : {}),
  };
}
