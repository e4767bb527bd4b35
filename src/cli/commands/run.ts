import { parseModelFlag } from "../../engine/model-spec.js";
import { createTenantRuntime } from "../../host/tenant-runtime.js";
import type { TenantConfig, TenantRuntime, RunHandle } from "../../host/types.js";
import { newId } from "../../loop/ids.js";
import { createSandboxPool } from "../../sandbox/index.js";
import { openStoreAt, type Store } from "../../store/index.js";
import { EgressEntrySchema, parseEgress } from "../../capabilities/egress.js";
import type { EgressEntry } from "../../capabilities/grants.js";
import { jsonPath } from "../../contracts/json-path.js";
import { HookboxError } from "../../errors.js";
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
      ...capabilityFlags(flags),
      ...(flags.userContextToModel !== undefined ? { userContextToModel: flags.userContextToModel } : {}),
    };
  } catch (error) {
    return failUsage("run", error);
  }

  let store: Store | undefined;
  try {
    // Opened before the runtime: ctx.kv lives in it.
    if (flags.store) store = await openStoreAt(flags.store);
  } catch (error) {
    return failUsage("run", error);
  }
  let pool;
  try {
    pool = createSandboxPool({ wall: flags.wall });
  } catch (error) {
    await store?.close();
    return failUsage("run", error);
  }
  try {
    let runtime: TenantRuntime;
    try {
      runtime = await createTenantRuntime(config, pool, store ? { kv: store.kv } : {});
    } catch (error) {
      await store?.close();
      return failUsage("run", error);
    }
    return await execute(flags, config, runtime, store);
  } finally {
    await pool.close();
  }
}

/** `--egress` and `--guard-model` as the tenant's capability grants. */
export function capabilityFlags(flags: RunFlags): Pick<TenantConfig, "capabilities"> {
  if (flags.egress.length === 0 && flags.guardModel === undefined) return {};
  const guardModel =
    flags.guardModel === undefined
      ? undefined
      : flags.guardModel === "run"
        ? ("run" as const)
        : parseModelFlag(flags.guardModel, { baseUrl: flags.baseUrl, apiKeyEnv: flags.apiKeyEnv });
  const egress = flags.egress.map(egressFlag);
  parseEgress(egress, "--egress");
  return { capabilities: { ...(egress.length ? { egress } : {}), ...(guardModel ? { guardModel } : {}) } };
}

/** `--egress URL`, or a whole entry as JSON: `--egress '{"url":"...","headers":{"authorization":{"env":"KEY"}}}'`. */
function egressFlag(value: string): EgressEntry | string {
  if (!value.trimStart().startsWith("{")) return value;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new HookboxError("USAGE", `--egress: not a URL and not JSON: ${(error as Error).message}`);
  }
  const entry = EgressEntrySchema.safeParse(parsed);
  if (!entry.success)
    throw new HookboxError("USAGE", `--egress: ${jsonPath(entry.error.issues[0].path)}: ${entry.error.issues[0].message}`);
  return entry.data;
}

async function execute(flags: RunFlags, config: TenantConfig, runtime: TenantRuntime, store: Store | undefined): Promise<number> {
  let handle: RunHandle;
  let closeStore = async () => {};
  if (store) {
    let manager: SessionManager;
    try {
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
