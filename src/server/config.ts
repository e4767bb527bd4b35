import { readFileSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { hash as hashOnce } from "node:crypto";
import { isPostgresUrl } from "../store/postgres/pg-driver.js";
import { z } from "zod";
import { HookboxError } from "../errors.js";
import type { ModelSpec, RunOptions, TenantConfig, RunBudgets } from "../host/types.js";
import type { SandboxLimits } from "../sandbox/api.js";
import type { CapabilityGrants, CapabilityLimits } from "../capabilities/grants.js";
import { EgressEntrySchema, parseEgress } from "../capabilities/egress.js";
import { parseJsonText } from "../contracts/json-text.js";
import { WALL_MODES, type WallMode } from "../sandbox/wall/mode.js";
import { ModelSettingsInput, SystemInput, UserContextToModelInput } from "../engine/model-settings.js";

/*
 * The `hookbox serve --config FILE` file (docs/server.md). Paths are relative to the file.
 * Every problem is a CONFIG error naming the file and the field (`tenants[1].apiKeys[0].env`).
 */

// A union's own error names the shapes it accepts: zod's default for a union is "Invalid input".
const ApiKeySchema = z.union(
  [
    z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name") }),
    z.strictObject({ sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, "must be 64 hex digits (the SHA-256 of the key)") }),
  ],
  { error: 'expected {"env": "VARIABLE_NAME"} or {"sha256": "<64 hex digits: the SHA-256 of the key>"}' },
);

const MODEL_SHAPES =
  'expected "scripted:FILE", "openai-compatible:MODEL" (with the tenant\'s "baseUrl") or ' +
  '{"kind": "openai-compatible", "model": "MODEL", "baseUrl": "https://...", "apiKeyEnv"?: "VARIABLE_NAME"}';
const ModelSchema = z.union(
  [
    z.string().regex(/^(scripted|openai-compatible):.+/, MODEL_SHAPES),
    z.strictObject({ kind: z.literal("openai-compatible"), model: z.string().min(1), baseUrl: z.url(), apiKeyEnv: z.string().optional() }),
  ],
  { error: MODEL_SHAPES },
);

const positiveInt = z.number().int().positive();

const LimitsSchema = z.strictObject({
  memoryMb: positiveInt.optional(),
  cpuMs: positiveInt.optional(),
  wallMs: positiveInt.optional(),
  maxIterations: positiveInt.optional(),
  maxParallelTools: positiveInt.optional(),
  toolTimeoutMs: positiveInt.optional(),
  pauseTimeoutMs: positiveInt.optional(),
  /** How long an approval waits before it counts as a rejection (default 300000). */
  approvalTimeoutMs: positiveInt.optional(),
  /** How many more inferences beforeFinish may ask for per run (default 3). */
  maxFinishContinues: z.number().int().nonnegative().optional(),
  /** Run starts per minute for the tenant (token bucket; default 600). */
  runsPerMinute: positiveInt.optional(),
  /** Authenticated requests per minute for the tenant (default 6000). */
  requestsPerMinute: positiveInt.optional(),
  /** Default and ceiling of a run's tokens (input plus output). */
  maxTokens: positiveInt.optional(),
  /** Default and ceiling of a run's cost, USD (by `pricing`). */
  maxCostUsd: z.number().positive().optional(),
  /** Retries per model call for 429, 5xx and network errors (default 2). */
  modelRetries: z.number().int().nonnegative().max(10).optional(),
  /** Run budgets (src/loop/run-budget.ts): JSON characters per run's events, per tool result, per turn. */
  maxRunBytes: positiveInt.optional(),
  maxToolResultBytes: positiveInt.optional(),
  maxTurnBytes: positiveInt.optional(),
  maxToolCallsPerInference: positiveInt.optional(),
  /** Bytes the tenant may keep in the store (default 1 GiB). */
  maxStoreBytes: positiveInt.optional(),
  /** Event streams (SSE) the tenant may hold open at once (default 16). */
  maxEventStreams: positiveInt.optional(),
  /** Replays (POST /v1/replays) the tenant may have in progress at once (default 1). */
  maxReplaysInFlight: positiveInt.optional(),
  /** Uploads (POST /v1/scripts: bundle, type check, trial load) the tenant may have in progress at once (default 2). */
  maxUploadsInFlight: positiveInt.optional(),
  /** Sandbox CPU one replay request may use, ms (default 30000). */
  replayCpuMs: positiveInt.optional(),
  /** Stored events the tenant's event streams may read again per minute, bytes of JSON (default 64 MiB). */
  eventReplayBytesPerMinute: positiveInt.optional(),
});

/** Bounds on what one run may do with its capabilities (docs/capabilities.md). */
const CapabilityLimitsSchema = z.strictObject({
  maxFetchesPerRun: z.number().int().nonnegative().optional(),
  fetchTimeoutMs: positiveInt.optional(),
  maxResponseBytes: positiveInt.optional(),
  maxRequestBytes: positiveInt.max(1024 * 1024).optional(),
  maxRedirects: z.number().int().nonnegative().optional(),
  maxKvOpsPerRun: z.number().int().nonnegative().optional(),
  maxModelCallsPerRun: z.number().int().nonnegative().optional(),
  modelTimeoutMs: positiveInt.optional(),
  maxModelOutputTokens: positiveInt.optional(),
});
/** The model's context budget and policy (docs/loop.md, "The model's context"); a run may ask for less, not more. */
export const ContextSchema = z.strictObject({
  maxTokens: positiveInt.optional(),
  maxBytes: positiveInt.optional(),
  summarize: z.boolean().optional(),
});
const PricingSchema = z.record(
  z.string().min(1),
  z.strictObject({ inputPerMTok: z.number().nonnegative(), outputPerMTok: z.number().nonnegative() }),
);

const TenantSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be 1-64 letters, digits, '_', '.', '-'"),
  apiKeys: z.array(ApiKeySchema).min(1),
  scripts: z.array(z.string().min(1)).default([]),
  hostTools: z.string().min(1).optional(),
  model: ModelSchema,
  fallbackModel: ModelSchema.optional(),
  /** For "openai-compatible:MODEL" strings (model, fallbackModel, guardModel): the server, as the CLI's --base-url. */
  baseUrl: z.url().optional(),
  /** For "openai-compatible:MODEL" strings: the variable holding the API key, as the CLI's --api-key-env. */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
    .optional(),
  /** USD per million tokens by model id; "*" for any model not named. */
  pricing: PricingSchema.optional(),
  limits: LimitsSchema.optional(),
  /** Ask the model for a streamed answer, so live readers (SSE, the web inspector) see its text as it comes (default false). */
  stream: z.boolean().optional(),
  /** "process-per-tenant": a worker process of the tenant's own (default "shared"). */
  isolation: z.enum(["shared", "process-per-tenant"]).optional(),
  /** The tier the tenant is in ("free", "paid", "trusted"...; default "default"): two cordons never share a worker. */
  cordon: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be 1-64 letters, digits, '_', '.', '-'")
    .optional(),
  /** URL prefixes ctx.fetch may reach, with host-side headers. */
  egress: z.array(EgressEntrySchema).optional(),
  /** The model ctx.model.generate calls; "run" is the tenant's own model. */
  guardModel: z
    .union([z.literal("run"), ModelSchema], { error: `expected "run" (the tenant's model), or ${MODEL_SHAPES.slice("expected ".length)}` })
    .optional(),
  /** ctx.kv: false denies it; quotaBytes bounds the tenant's entries (default 10 MiB). */
  kv: z
    .union([z.literal(false), z.strictObject({ quotaBytes: positiveInt.optional() })], {
      error: 'expected false (no ctx.kv) or {"quotaBytes"?: a positive integer}',
    })
    .optional(),
  capabilityLimits: CapabilityLimitsSchema.optional(),
  /** Sessions whose last run started more than runsDays ago are deleted, with everything of them. */
  retention: z.strictObject({ runsDays: z.number().positive().max(36500) }).optional(),
  /** Instructions for every run of the tenant (a session's or run's own replace them). */
  system: SystemInput.optional(),
  /** Model settings for every run of the tenant (a session's or run's merge over them key by key). */
  modelSettings: ModelSettingsInput.optional(),
  /** What the model is shown of a run's user context (default "request": the original request only). */
  userContextToModel: UserContextToModelInput.optional(),
  /** What one model call may be sent: the default and ceiling of the tenant's runs. */
  context: ContextSchema.optional(),
});

const ConfigSchema = z.strictObject({
  tenants: z.array(TenantSchema).min(1),
  /**
   * Where the store is (`--store` overrides it): a SQLite file (relative to the config file), a `postgres://` URL,
   * or {"env": NAME} naming a variable that holds either (a URL with a password stays out of the file).
   */
  store: z
    .union([z.string().min(1), z.strictObject({ env: z.string().min(1) })], {
      error: 'expected a SQLite file path, a postgres:// URL, or {"env": "NAME"} (a variable holding either)',
    })
    .optional(),
  server: z
    .strictObject({
      host: z.string().min(1).optional(),
      /** Largest request body accepted, bytes (default 1 MiB). */
      maxBodyBytes: positiveInt.optional(),
      /** On SIGTERM, how long in-flight runs may finish before they are interrupted, ms (default 1000). */
      drainMs: z.number().int().nonnegative().optional(),
      /** A tenant's isolate unused for this long is disposed, ms (default 300000; 0: never by age). */
      idleMs: z.number().int().nonnegative().optional(),
      /** Tenants with a live isolate, at most (default 2000; least recently used idle ones go first). */
      maxLiveIsolates: positiveInt.optional(),
      /** Tenants a shared sandbox worker holds, at most (default 64): the blast radius of a worker taken over. */
      maxTenantsPerWorker: positiveInt.optional(),
      /** The sandbox's second wall around every worker (default "auto"; "required" recommended). */
      wall: z.enum(WALL_MODES).optional(),
      /** Where bundles are kept for the next start (relative to the config file); false: nowhere (docs/server.md, "Start-up"). */
      scriptCache: z.union([z.string().min(1), z.literal(false)]).optional(),
      /** Client connections open at once (default and ceiling: three quarters of the descriptor limit). */
      maxConnections: positiveInt.optional(),
      /** Time a client has to send a request's headers and body, ms (default 30000); then 408 and closed. */
      requestTimeoutMs: positiveInt.optional(),
      /** Operator keys: GET /metrics and /v1/admin/* (never a tenant's routes). */
      adminKeys: z.array(ApiKeySchema).optional(),
      /** Browser origins allowed to call the API (CORS); none: no CORS headers at all. */
      cors: z
        .strictObject({
          origins: z.array(
            z.string().regex(/^https?:\/\/[^/\s]+$/, 'must be an origin: scheme, host and port, no path ("https://app.example.com")'),
          ),
        })
        .optional(),
      /** A PostgreSQL store: how long a run's lease lasts unless its node renews it, ms (default 15000, at least 1000). */
      leaseMs: z.number().int().min(1000).optional(),
      /** A PostgreSQL store: this node's name (default `<hostname>:<pid>`), named in `run-resumed` and in `/healthz`. */
      node: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, "must be 1-128 letters, digits, '_', '.', ':', '-'")
        .optional(),
    })
    .optional(),
});

export interface ServedTenant {
  config: TenantConfig;
  runsPerMinute: number;
  requestsPerMinute: number;
  maxStoreBytes: number;
  maxEventStreams: number;
  /** Days a session is kept after its last run started (none: forever). */
  retentionDays?: number;
  maxReplaysInFlight: number;
  maxUploadsInFlight: number;
  replayCpuMs: number;
  eventReplayBytesPerMinute: number;
}

export const DEFAULT_MAX_STORE_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_MAX_EVENT_STREAMS = 16;
export const DEFAULT_MAX_REPLAYS_IN_FLIGHT = 1;
export const DEFAULT_MAX_UPLOADS_IN_FLIGHT = 2;
export const DEFAULT_REPLAY_CPU_MS = 30_000;
export const DEFAULT_EVENT_REPLAY_BYTES_PER_MINUTE = 64 * 1024 * 1024;

export interface ServerConfig {
  file: string;
  tenants: ServedTenant[];
  /** SHA-256 hex of each accepted key -> tenant name. */
  keys: Map<string, string>;
  host: string;
  maxBodyBytes: number;
  drainMs: number;
  /** The sandbox pool's eviction options (docs/sandbox.md); unset: the pool's defaults. */
  idleMs?: number;
  maxLiveIsolates?: number;
  maxTenantsPerWorker?: number;
  /** Absent: the pool's default ("auto"). */
  wall?: WallMode;
  /** The script cache's directory (absolute), false for none; absent: the default (script-cache.ts). */
  scriptCache?: string | false;
  /** Absent: derived from the descriptor limit (src/server/connections.ts). */
  maxConnections?: number;
  requestTimeoutMs?: number;
  /** SHA-256 hex of each operator key (GET /metrics, /v1/admin/*). */
  adminKeys: Set<string>;
  /** Origins allowed by CORS; empty: CORS off. */
  corsOrigins: string[];
  /** The config's `store`, resolved (a file path made absolute, a variable read); `--store` overrides it. */
  store?: string;
  /** A PostgreSQL store's lease length and this node's name. */
  leaseMs?: number;
  node?: string;
}

/** `requireKeys: false` (hookbox resume) skips resolving `{env}` keys: resume needs tenants, not keys. */
export function loadServerConfig(file: string, options: { env?: NodeJS.ProcessEnv; requireKeys?: boolean } = {}): ServerConfig {
  const env = options.env ?? process.env;
  const requireKeys = options.requireKeys ?? true;
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw configError(file, "", (error as Error).message);
  }
  let raw: unknown;
  try {
    raw = parseJsonText(text);
  } catch (error) {
    throw configError(file, "", `not valid JSON: ${(error as Error).message}`);
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const detail =
      issue.code === "unrecognized_keys"
        ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}`
        : issue.message;
    throw configError(file, fieldPath(issue.path), detail);
  }
  const base = dirname(path);
  const keys = new Map<string, string>();
  const keyOwners = new Map<string, string>();
  const names = new Map<string, number>();
  const tenants = parsed.data.tenants.map((tenant, t): ServedTenant => {
    const at = `tenants[${t}]`;
    if (names.has(tenant.name))
      throw configError(file, `${at}.name`, `duplicate tenant "${tenant.name}" (also tenants[${names.get(tenant.name)}])`);
    names.set(tenant.name, t);
    tenant.apiKeys.forEach((key, k) => {
      const where = `${at}.apiKeys[${k}]`;
      const hash = keyHash(file, key, where, env, requireKeys);
      if (hash === undefined) return;
      if (keyOwners.has(hash)) throw configError(file, where, `duplicate key (the same key as ${keyOwners.get(hash)})`);
      keyOwners.set(hash, where);
      keys.set(hash, tenant.name);
    });
    const scripts = tenant.scripts.map((script, s) => ({ path: existingFile(file, base, script, `${at}.scripts[${s}]`) }));
    const config: TenantConfig = { name: tenant.name, scripts, model: modelSpec(file, base, tenant.model, `${at}.model`, tenant) };
    if (tenant.fallbackModel) config.fallbackModel = modelSpec(file, base, tenant.fallbackModel, `${at}.fallbackModel`, tenant);
    if (tenant.pricing) config.pricing = tenant.pricing;
    if (tenant.isolation) config.isolation = tenant.isolation;
    if (tenant.stream) config.stream = true;
    if (tenant.cordon) config.cordon = tenant.cordon;
    if (tenant.hostTools) config.hostToolsModule = existingFile(file, base, tenant.hostTools, `${at}.hostTools`);
    const limits = tenant.limits ?? {};
    const sandbox: Partial<SandboxLimits> = {};
    if (limits.memoryMb !== undefined) sandbox.memoryMb = limits.memoryMb;
    if (limits.cpuMs !== undefined) sandbox.cpuMs = limits.cpuMs;
    if (limits.wallMs !== undefined) sandbox.wallMs = limits.wallMs;
    if (Object.keys(sandbox).length) config.limits = sandbox;
    const runDefaults: RunOptions = {};
    if (limits.maxIterations !== undefined) runDefaults.maxIterations = limits.maxIterations;
    if (limits.maxParallelTools !== undefined) runDefaults.maxParallelTools = limits.maxParallelTools;
    if (limits.toolTimeoutMs !== undefined) runDefaults.toolTimeoutMs = limits.toolTimeoutMs;
    if (limits.pauseTimeoutMs !== undefined) runDefaults.pauseTimeoutMs = limits.pauseTimeoutMs;
    if (limits.maxTokens !== undefined) runDefaults.maxTokens = limits.maxTokens;
    if (limits.maxCostUsd !== undefined) runDefaults.maxCostUsd = limits.maxCostUsd;
    if (limits.modelRetries !== undefined) runDefaults.modelRetries = limits.modelRetries;
    if (limits.approvalTimeoutMs !== undefined) runDefaults.approvalTimeoutMs = limits.approvalTimeoutMs;
    if (limits.maxFinishContinues !== undefined) runDefaults.maxFinishContinues = limits.maxFinishContinues;
    if (tenant.system !== undefined) runDefaults.system = tenant.system;
    if (tenant.modelSettings !== undefined) runDefaults.modelSettings = tenant.modelSettings;
    if (tenant.userContextToModel !== undefined) config.userContextToModel = tenant.userContextToModel;
    const capabilities = capabilityGrants(file, base, tenant, at);
    if (capabilities) config.capabilities = capabilities;
    if (tenant.context) {
      if (tenant.context.summarize && !capabilities?.guardModel)
        throw configError(
          file,
          `${at}.context.summarize`,
          `summaries are made by the tenant's guard model: give the tenant a "guardModel"`,
        );
      runDefaults.context = tenant.context;
    }
    if (Object.keys(runDefaults).length) config.runDefaults = runDefaults;
    const budgets: Partial<RunBudgets> = {};
    for (const name of ["maxRunBytes", "maxToolResultBytes", "maxTurnBytes", "maxToolCallsPerInference"] as const) {
      if (limits[name] !== undefined) budgets[name] = limits[name];
    }
    if (Object.keys(budgets).length) config.budgets = budgets;
    return {
      config,
      runsPerMinute: limits.runsPerMinute ?? 600,
      requestsPerMinute: limits.requestsPerMinute ?? 6000,
      maxStoreBytes: limits.maxStoreBytes ?? DEFAULT_MAX_STORE_BYTES,
      maxEventStreams: limits.maxEventStreams ?? DEFAULT_MAX_EVENT_STREAMS,
      ...(tenant.retention ? { retentionDays: tenant.retention.runsDays } : {}),
      maxReplaysInFlight: limits.maxReplaysInFlight ?? DEFAULT_MAX_REPLAYS_IN_FLIGHT,
      maxUploadsInFlight: limits.maxUploadsInFlight ?? DEFAULT_MAX_UPLOADS_IN_FLIGHT,
      replayCpuMs: limits.replayCpuMs ?? DEFAULT_REPLAY_CPU_MS,
      eventReplayBytesPerMinute: limits.eventReplayBytesPerMinute ?? DEFAULT_EVENT_REPLAY_BYTES_PER_MINUTE,
    };
  });
  const server = parsed.data.server ?? {};
  const adminKeys = new Set<string>();
  (server.adminKeys ?? []).forEach((key, k) => {
    const where = `server.adminKeys[${k}]`;
    const hash = keyHash(file, key, where, env, requireKeys);
    if (hash === undefined) return;
    if (keyOwners.has(hash)) throw configError(file, where, `duplicate key (the same key as ${keyOwners.get(hash)})`);
    keyOwners.set(hash, where);
    adminKeys.add(hash);
  });
  return {
    adminKeys,
    corsOrigins: server.cors?.origins ?? [],
    file: path,
    tenants,
    keys,
    host: server.host ?? "127.0.0.1",
    maxBodyBytes: server.maxBodyBytes ?? 1024 * 1024,
    drainMs: server.drainMs ?? 1000,
    ...(server.idleMs !== undefined ? { idleMs: server.idleMs } : {}),
    ...(server.maxLiveIsolates !== undefined ? { maxLiveIsolates: server.maxLiveIsolates } : {}),
    ...(server.maxTenantsPerWorker !== undefined ? { maxTenantsPerWorker: server.maxTenantsPerWorker } : {}),
    ...(server.wall ? { wall: server.wall } : {}),
    ...(server.scriptCache !== undefined ? { scriptCache: server.scriptCache === false ? false : resolve(base, server.scriptCache) } : {}),
    ...(server.maxConnections !== undefined ? { maxConnections: server.maxConnections } : {}),
    ...(server.requestTimeoutMs !== undefined ? { requestTimeoutMs: server.requestTimeoutMs } : {}),
    ...(server.leaseMs !== undefined ? { leaseMs: server.leaseMs } : {}),
    ...(server.node !== undefined ? { node: server.node } : {}),
    ...storeOf(file, base, parsed.data.store, env),
  };
}

/** A key entry's SHA-256 hex; undefined for an {env} key when keys are not required (hookbox resume). */
function keyHash(
  file: string,
  key: z.infer<typeof ApiKeySchema>,
  where: string,
  env: NodeJS.ProcessEnv,
  requireKeys: boolean,
): string | undefined {
  if (!("env" in key)) return key.sha256.toLowerCase();
  if (!requireKeys) return undefined;
  const value = env[key.env];
  if (!value) throw configError(file, `${where}.env`, `environment variable ${key.env} is not set`);
  return sha256Hex(value);
}

/** The config's store: a postgres:// URL as it is, a file path relative to the config, or what a variable holds. */
function storeOf(file: string, base: string, store: string | { env: string } | undefined, env: NodeJS.ProcessEnv): { store?: string } {
  if (store === undefined) return {};
  let value: string;
  if (typeof store === "string") value = store;
  else {
    const held = env[store.env];
    if (!held) throw configError(file, "store.env", `environment variable ${store.env} is not set`);
    value = held;
  }
  return { store: isPostgresUrl(value) || value === ":memory:" ? value : resolve(base, value) };
}

export function sha256Hex(value: string): string {
  return hashOnce("sha256", value, "hex");
}

/** A tenant's model field as a ModelSpec; `openai-compatible:MODEL` takes the tenant's baseUrl and apiKeyEnv. */
function modelSpec(
  file: string,
  base: string,
  model: z.infer<typeof ModelSchema>,
  field: string,
  tenant: { baseUrl?: string; apiKeyEnv?: string },
): ModelSpec {
  if (typeof model !== "string")
    return {
      kind: "openai-compatible",
      model: model.model,
      baseUrl: model.baseUrl,
      ...(model.apiKeyEnv ? { apiKeyEnv: model.apiKeyEnv } : {}),
    };
  if (model.startsWith("openai-compatible:")) {
    if (!tenant.baseUrl)
      throw configError(file, field, `"${model}" needs the tenant's "baseUrl" (the server's URL, as --base-url gives the CLI)`);
    return {
      kind: "openai-compatible",
      model: model.slice("openai-compatible:".length),
      baseUrl: tenant.baseUrl,
      ...(tenant.apiKeyEnv ? { apiKeyEnv: tenant.apiKeyEnv } : {}),
    };
  }
  return { kind: "scripted", file: existingFile(file, base, model.slice("scripted:".length), field) };
}

function capabilityGrants(file: string, base: string, tenant: z.infer<typeof TenantSchema>, at: string): CapabilityGrants | undefined {
  const grants: CapabilityGrants = {};
  if (tenant.egress?.length) {
    try {
      parseEgress(tenant.egress, `${at}.egress`);
    } catch (error) {
      const problem = error as HookboxError;
      throw new HookboxError("CONFIG", `config ${file}: ${problem.message}`, { file, field: problem.details.field });
    }
    grants.egress = tenant.egress;
  }
  if (tenant.guardModel !== undefined)
    grants.guardModel = tenant.guardModel === "run" ? "run" : modelSpec(file, base, tenant.guardModel, `${at}.guardModel`, tenant);
  if (tenant.kv === false) grants.kv = false;
  const limits: Partial<CapabilityLimits> = { ...tenant.capabilityLimits };
  if (tenant.kv && tenant.kv.quotaBytes !== undefined) limits.kvQuotaBytes = tenant.kv.quotaBytes;
  if (Object.keys(limits).length) grants.limits = limits;
  return Object.keys(grants).length ? grants : undefined;
}

function existingFile(file: string, base: string, relative: string, field: string): string {
  const path = resolve(base, relative);
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch {
    throw configError(file, field, `file ${relative} does not exist (resolved to ${path})`);
  }
  if (!isFile) throw configError(file, field, `${relative} is not a file (resolved to ${path})`);
  return path;
}

function fieldPath(path: PropertyKey[]): string {
  return path.map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join("");
}

function configError(file: string, field: string, detail: string): HookboxError {
  return new HookboxError("CONFIG", `config ${file}${field ? `: ${field}` : ""}: ${detail}`, { file, field });
}
