import { parseModelFlag } from "../../engine/model-spec.js";
import { createTenantRuntime } from "../../host/tenant-runtime.js";
import type { TenantConfig, TenantRuntime } from "../../host/types.js";
import type { RunHandle } from "../../loop/handle.js";
import { newId } from "../../loop/ids.js";
import { createSandboxPool } from "../../sandbox/index.js";
import { openStore } from "../../store/index.js";
import { SessionManager } from "../../session/manager.js";
import { parseRunFlags, type RunFlags } from "../run-flags.js";
import { failUsage } from "../exit.js";
import { driveRun } from "../drive-run.js";

/** `hookbox run <script...> --prompt TEXT [options]`: one tool loop, events on stdout. */
export async function runCommand(argv: string[]): Promise<number> {
  let flags: RunFlags;
  let config: TenantConfig;
  try {
    flags = parseRunFlags(argv);
    config = {
      name: flags.tenant,
      scripts: flags.scripts.map((path) => ({ path })),
      model: parseModelFlag(flags.model, { baseUrl: flags.baseUrl, apiKeyEnv: flags.apiKeyEnv }),
      ...(flags.fallbackModel
        ? {
            fallbackModel: parseModelFlag(flags.fallbackModel, {
              baseUrl: flags.fallbackBaseUrl ?? flags.baseUrl,
              apiKeyEnv: flags.apiKeyEnv,
              flag: "--fallback-model",
            }),
          }
        : {}),
      ...(flags.pricing ? { pricing: flags.pricing } : {}),
      ...(flags.hostTools ? { hostToolsModule: flags.hostTools } : {}),
      limits: flags.limits,
    };
  } catch (error) {
    return failUsage("run", error);
  }

  let pool;
  try {
    pool = createSandboxPool({ wall: flags.wall });
  } catch (error) {
    return failUsage("run", error);
  }
  try {
    let runtime: TenantRuntime;
    try {
      runtime = await createTenantRuntime(config, pool);
    } catch (error) {
      return failUsage("run", error);
    }
    return await execute(flags, config, runtime);
  } finally {
    await pool.close();
  }
}

async function execute(flags: RunFlags, config: TenantConfig, runtime: TenantRuntime): Promise<number> {
  let handle: RunHandle;
  let closeStore = async () => {};
  if (flags.store) {
    let manager: SessionManager;
    try {
      const store = openStore(flags.store);
      manager = new SessionManager({ store, runtimeFor: async () => runtime });
      closeStore = async () => {
        await manager.close();
        await store.close();
      };
      const session =
        (flags.session && (await manager.get(flags.session))) ||
        (await manager.create({ tenant: config.name, tenantConfig: config, sessionId: flags.session }));
      handle = await session.run(flags.prompt, flags.options);
    } catch (error) {
      await closeStore();
      return failUsage("run", error);
    }
  } else {
    handle = runtime.start({ sessionId: newId("sess"), prompt: flags.prompt, options: flags.options });
  }

  try {
    return await driveRun(handle, { command: "run", json: flags.json, step: flags.options.step ?? false });
  } finally {
    await closeStore();
  }
}
