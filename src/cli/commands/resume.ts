import { parseArgs } from "node:util";
import { HookboxError } from "../../errors.js";
import { createTenantRuntime } from "../../host/tenant-runtime.js";
import type { TenantConfig, TenantRuntime, RunHandle } from "../../host/types.js";
import { createSandboxPool } from "../../sandbox/index.js";
import { openStoreAt, type Store } from "../../store/index.js";
import { SessionManager } from "../../session/manager.js";
import { restoreTenantConfig } from "../../session/tenant-record.js";
import { loadServerConfig, type ServerConfig } from "../../server/config.js";
import { wallModeFlag, type WallMode } from "../../sandbox/wall/mode.js";
import { Deployments } from "../../policy/deployments.js";
import { failUsage } from "../exit.js";
import { driveRun } from "../drive-run.js";
import { positiveInt } from "../run-flags.js";

const usage =
  "usage: hookbox resume --store FILE|URL --session ID [--config FILE] [--json] [--approval-timeout-ms N] [--wall auto|required|none]";

/**
 * `hookbox resume`: continues a session's interrupted run from its last committed snapshot, in this process.
 * Prints the resumed run's events (the ones after the stored interruption) and exits like `hookbox run`.
 */
export async function resumeCommand(argv: string[]): Promise<number> {
  let flags: { store: string; session: string; config?: string; json: boolean; approvalTimeoutMs?: number; wall?: WallMode };
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        store: { type: "string" },
        session: { type: "string" },
        config: { type: "string" },
        json: { type: "boolean" },
        "approval-timeout-ms": { type: "string" },
        wall: { type: "string" },
      },
      strict: true,
    });
    if (!values.store || !values.session) throw new HookboxError("USAGE", `--store and --session are required (${usage})`);
    flags = {
      store: values.store,
      session: values.session,
      json: values.json ?? false,
      ...(values.config ? { config: values.config } : {}),
      approvalTimeoutMs: positiveInt("approval-timeout-ms", values["approval-timeout-ms"]),
      wall: wallModeFlag(values.wall),
    };
  } catch (error) {
    return failUsage("resume", error instanceof HookboxError ? error : new HookboxError("USAGE", `${(error as Error).message} (${usage})`));
  }

  let config: ServerConfig | undefined;
  let store: Store;
  try {
    if (flags.config) config = loadServerConfig(flags.config, { requireKeys: false });
    store = await openStoreAt(flags.store);
  } catch (error) {
    return failUsage("resume", error);
  }
  let pool;
  try {
    // Resumed runs get the wall the server would give them: --wall, else the config's server.wall.
    pool = createSandboxPool({ wall: flags.wall ?? config?.wall });
  } catch (error) {
    await store.close();
    return failUsage("resume", error);
  }
  let manager: SessionManager | undefined;
  try {
    const record = await store.getSession(flags.session);
    if (!record) return failUsage("resume", new HookboxError("NOT_FOUND", `no session ${flags.session} in store ${flags.store}`));
    let override: Partial<TenantConfig> | undefined;
    if (config) {
      const tenant = config.tenants.find((t) => t.config.name === record.tenant);
      if (!tenant)
        return failUsage(
          "resume",
          new HookboxError("CONFIG", `config ${flags.config} has no tenant "${record.tenant}" (the tenant of session ${record.id})`),
        );
      override = tenant.config;
    }
    const before = (await store.listRuns(record.id)).at(-1);
    let runtime: TenantRuntime;
    try {
      const config = restoreTenantConfig(record.tenantConfig, override);
      const configRuntime = await createTenantRuntime(config, pool, { kv: store.kv });
      // A run started from a deployment goes on with that deployment's script versions (kept in the store).
      const deployments = new Deployments({
        store,
        pool,
        tenants: new Map([[record.tenant, config]]),
        configRuntimes: new Map([[record.tenant, configRuntime]]),
      });
      runtime = before ? await deployments.runtimeFor(record.tenant, before) : configRuntime;
    } catch (error) {
      return failUsage("resume", error);
    }
    manager = new SessionManager({ store, runtimeFor: async () => runtime });
    let handle: RunHandle;
    try {
      handle = await manager.resume(record.id, { approvalTimeoutMs: flags.approvalTimeoutMs });
    } catch (error) {
      return failUsage("resume", error);
    }
    return await driveRun(handle, {
      command: "resume",
      json: flags.json,
      step: before?.options.step ?? false,
      events: manager.events(handle.runId, before?.lastSeq ?? 0),
    });
  } catch (error) {
    return failUsage("resume", error);
  } finally {
    await manager?.close();
    await pool.close();
    await store.close();
  }
}
