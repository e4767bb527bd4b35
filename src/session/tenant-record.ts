import { readFile } from "node:fs/promises";
import { createHash } from "node:crypto";
import { HookboxError } from "../errors.js";
import type { JsonObject } from "../turns/json.js";
import type { TenantConfig } from "../host/types.js";
import type { ScriptSource, UploadedFiles } from "../sandbox/api.js";

/*
 * What a session records about its tenant so another process (`hookbox resume`) can rebuild the runtime:
 * the scripts' entry sources as they were when the session was created (a later edit of the file does not
 * change what a resumed run executes), the host-tools module path, the model and fallback specs, pricing,
 * limits and defaults.
 * Host tools are trusted code and stay a path; `--config` may supply them (and the model) instead.
 */

type RecordedScript = { filename: string; source: string; sha256: string } | UploadedFiles;

export async function recordTenantConfig(config: TenantConfig): Promise<JsonObject> {
  const scripts: RecordedScript[] = [];
  for (const script of config.scripts) {
    if ("files" in script) {
      scripts.push(script);
      continue;
    }
    const { filename, source } = "path" in script ? { filename: script.path, source: await readScript(script.path, config.name) } : script;
    scripts.push({ filename, source, sha256: createHash("sha256").update(source).digest("hex") });
  }
  return JSON.parse(
    JSON.stringify({
      name: config.name,
      scripts,
      hostToolsModule: config.hostToolsModule,
      model: config.model,
      fallbackModel: config.fallbackModel,
      pricing: config.pricing,
      limits: config.limits,
      capabilities: config.capabilities,
      runDefaults: config.runDefaults,
      budgets: config.budgets,
      userContextToModel: config.userContextToModel,
      stream: config.stream,
    }),
  ) as JsonObject;
}

/** Rebuilds the TenantConfig of a stored session; `override` (from `--config`) wins for host tools, model, limits. */
export function restoreTenantConfig(recorded: JsonObject, override?: Partial<TenantConfig>): TenantConfig {
  const record = recorded as unknown as Omit<TenantConfig, "scripts"> & { scripts: RecordedScript[] };
  if (typeof record.name !== "string" || !Array.isArray(record.scripts) || !record.model) {
    throw new HookboxError("STORE", "the stored session has no usable tenant record (name, scripts, model)", {});
  }
  const scripts: ScriptSource[] = record.scripts.map((script) =>
    "files" in script ? script : { source: script.source, filename: script.filename },
  );
  const config: TenantConfig = { name: record.name, scripts, model: record.model };
  const hostToolsModule = override?.hostToolsModule ?? record.hostToolsModule;
  if (hostToolsModule) config.hostToolsModule = hostToolsModule;
  if (override?.model) config.model = override.model;
  const fallbackModel = override?.fallbackModel ?? record.fallbackModel;
  if (fallbackModel) config.fallbackModel = fallbackModel;
  const pricing = override?.pricing ?? record.pricing;
  if (pricing) config.pricing = pricing;
  const limits = override?.limits ?? record.limits;
  if (limits) config.limits = limits;
  const capabilities = override?.capabilities ?? record.capabilities;
  if (capabilities) config.capabilities = capabilities;
  const runDefaults = override?.runDefaults ?? record.runDefaults;
  if (runDefaults) config.runDefaults = runDefaults;
  const budgets = override?.budgets ?? record.budgets;
  if (budgets) config.budgets = budgets;
  const userContextToModel = override?.userContextToModel ?? record.userContextToModel;
  if (userContextToModel !== undefined) config.userContextToModel = userContextToModel;
  if (override?.stream ?? record.stream) config.stream = true;
  return config;
}

async function readScript(path: string, tenant: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new HookboxError("SCRIPT_LOAD", `tenant ${tenant}: cannot read script ${path}: ${(error as Error).message}`, { path, tenant });
  }
}
