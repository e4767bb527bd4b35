import { readFile } from "node:fs/promises";
import { statSync, type BigIntStats } from "node:fs";
import { createHash } from "node:crypto";
import { HookboxError } from "../errors.js";
import type { JsonObject } from "../turns/json.js";
import { deepFreeze } from "../turns/deep-freeze.js";
import { jsonOf, keepJson } from "../turns/known-json.js";
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
    if ("path" in script) {
      scripts.push({ filename: script.path, ...(await readScript(script.path, config.name)) });
      continue;
    }
    scripts.push({ filename: script.filename, source: script.source, sha256: sha256Of(script.source) });
  }
  const json = JSON.stringify({
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
  });
  return sharedRecord(config.name, json);
}

/*
 * Every session of a tenant records the same config until the config or a script changes, and the server keeps the
 * records of its latest sessions (src/session/known-sessions.ts): each its own parsed copy would hold the tenant's
 * script sources a thousand times over, for the garbage collector to walk. So sessions of an unchanged config share
 * one record, frozen (nothing may change it: it is what every one of those sessions recorded). The latest record of
 * RECORDS_KEPT tenants is kept, the least recently recorded out first.
 */
const RECORDS_KEPT = 256;
const latestRecords = new Map<string, JsonObject>();

function sharedRecord(tenant: string, json: string): JsonObject {
  const latest = latestRecords.get(tenant);
  latestRecords.delete(tenant);
  // A record's text is the one it was parsed from (frozenRecord keeps it).
  const record = latest !== undefined && jsonOf(latest) === json ? latest : frozenRecord(json);
  latestRecords.set(tenant, record);
  if (latestRecords.size > RECORDS_KEPT) latestRecords.delete(latestRecords.keys().next().value!);
  return record;
}

/** A record parsed from `json` and frozen, with `json` kept as its text: every new session's row stores it. */
function frozenRecord(json: string): JsonObject {
  const record = JSON.parse(json) as JsonObject;
  keepJson(record, json);
  return deepFreeze(record);
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

/*
 * A script file is read and hashed again only when its stat says it may have changed: its device, inode, size,
 * modification and change times (nanoseconds) all equal to the read remembered for its path. A file whose times are
 * within RACY_MS of when it was read could still change without moving them (the kernel's clock ticks coarser than
 * nanoseconds), so such a read is not remembered. One entry per path, as many as the config names.
 */
const RACY_MS = 2000n;
interface ReadScript {
  /** The stat the read was made at (statKey). */
  key: string;
  script: { source: string; sha256: string };
}
const readScripts = new Map<string, ReadScript>();

const sha256Of = (source: string) => createHash("sha256").update(source).digest("hex");
const statKey = (stats: BigIntStats) => `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;

async function readScript(path: string, tenant: string): Promise<{ source: string; sha256: string }> {
  try {
    // Synchronous: a stat of the operator's own script file takes microseconds, an asynchronous one a trip to
    // libuv's thread pool that costs more CPU than the read it saves.
    const before = statSync(path, { bigint: true });
    const key = statKey(before);
    const remembered = readScripts.get(path);
    if (remembered?.key === key) return remembered.script;
    const source = await readFile(path, "utf8");
    const script = { source, sha256: sha256Of(source) };
    const newest = before.mtimeNs > before.ctimeNs ? before.mtimeNs : before.ctimeNs;
    if (BigInt(Date.now()) * 1_000_000n - newest > RACY_MS * 1_000_000n) readScripts.set(path, { key, script });
    else readScripts.delete(path);
    return script;
  } catch (error) {
    throw new HookboxError("SCRIPT_LOAD", `tenant ${tenant}: cannot read script ${path}: ${(error as Error).message}`, { path, tenant });
  }
}
