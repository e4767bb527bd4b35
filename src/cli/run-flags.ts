import { parseArgs } from "node:util";
import { readFileSync } from "node:fs";
import { MAX_SYSTEM_CHARS, ModelSettingsInput, UserContextToModelInput, type UserContextToModel } from "../engine/model-settings.js";
import { HookboxError } from "../errors.js";
import type { RunOptions } from "../host/types.js";
import type { SandboxLimits } from "../sandbox/api.js";
import type { Pricing } from "../host/usage.js";
import { parseTraceparent } from "../telemetry/run-trace.js";
import { wallModeFlag, type WallMode } from "../sandbox/wall/mode.js";

export interface RunFlags {
  scripts: string[];
  prompt: string;
  model: string;
  fallbackModel?: string;
  fallbackBaseUrl?: string;
  pricing?: Pricing;
  baseUrl?: string;
  apiKeyEnv?: string;
  hostTools?: string;
  tenant: string;
  json: boolean;
  store?: string;
  session?: string;
  limits: Partial<SandboxLimits>;
  options: RunOptions;
  /** The sandbox's second wall (`--wall`; the pool's default when absent). */
  wall?: WallMode;
  /** `--egress URL` (repeatable): URL prefixes ctx.fetch may reach. */
  egress: string[];
  /** `--guard-model SPEC`: the model ctx.model.generate calls (`run`: the run's model). */
  guardModel?: string;
  /** `--user-context-to-model request|none|FIELD,...`: what of the user context the model is shown. */
  userContextToModel?: UserContextToModel;
}

export const runFlagSpec = {
  prompt: { type: "string" },
  model: { type: "string" },
  "base-url": { type: "string" },
  "api-key-env": { type: "string" },
  "host-tools": { type: "string" },
  "user-context": { type: "string" },
  tenant: { type: "string" },
  tags: { type: "string" },
  "max-iterations": { type: "string" },
  "max-parallel-tools": { type: "string" },
  "tool-timeout-ms": { type: "string" },
  "memory-mb": { type: "string" },
  "cpu-ms": { type: "string" },
  "wall-ms": { type: "string" },
  "pause-timeout-ms": { type: "string" },
  "approval-timeout-ms": { type: "string" },
  "max-finish-continues": { type: "string" },
  step: { type: "boolean" },
  json: { type: "boolean" },
  store: { type: "string" },
  session: { type: "string" },
  "max-tokens": { type: "string" },
  "max-cost-usd": { type: "string" },
  pricing: { type: "string", multiple: true },
  "model-retries": { type: "string" },
  "fallback-model": { type: "string" },
  "fallback-base-url": { type: "string" },
  traceparent: { type: "string" },
  wall: { type: "string" },
  egress: { type: "string", multiple: true },
  "guard-model": { type: "string" },
  system: { type: "string" },
  temperature: { type: "string" },
  "max-output-tokens": { type: "string" },
  "top-p": { type: "string" },
  "tool-choice": { type: "string" },
  "stop-sequence": { type: "string", multiple: true },
  seed: { type: "string" },
  "user-context-to-model": { type: "string" },
  "context-tokens": { type: "string" },
  "context-bytes": { type: "string" },
  "summarize-context": { type: "boolean" },
} as const;

/** A flag's value as a positive integer, or a USAGE error naming the flag. */
export function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new HookboxError("USAGE", `--${flag} must be a positive integer, got "${value}"`);
  return n;
}

function nonNegativeInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new HookboxError("USAGE", `--${flag} must be a non-negative integer, got "${value}"`);
  return n;
}

function positiveNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new HookboxError("USAGE", `--${flag} must be a positive number, got "${value}"`);
  return n;
}

/** `--pricing MODEL=INPUT,OUTPUT` (USD per million tokens), repeatable; MODEL `*` prices any other model. */
function parsePricing(values: string[] | undefined): Pricing | undefined {
  if (!values?.length) return undefined;
  const pricing: Pricing = {};
  for (const value of values) {
    const match = /^([^=]+)=([^,]+),([^,]+)$/.exec(value.trim());
    const input = Number(match?.[2]);
    const output = Number(match?.[3]);
    if (!match || !Number.isFinite(input) || !Number.isFinite(output) || input < 0 || output < 0)
      throw new HookboxError(
        "USAGE",
        `--pricing "${value}": expected MODEL=INPUT,OUTPUT in USD per million tokens, e.g. gpt-4o-mini=0.15,0.6`,
      );
    pricing[match[1].trim()] = { inputPerMTok: input, outputPerMTok: output };
  }
  return pricing;
}

function parseTags(value: string | undefined): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  const tags: Record<string, string> = {};
  for (const pair of value.split(",").filter(Boolean)) {
    const eq = pair.indexOf("=");
    if (eq < 1) throw new HookboxError("USAGE", `--tags: "${pair}" is not k=v`);
    tags[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return tags;
}

function parseUserContext(value: string | undefined): RunOptions["userContext"] {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new HookboxError("USAGE", `--user-context is not JSON: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new HookboxError("USAGE", "--user-context must be a JSON object");
  return parsed as RunOptions["userContext"];
}

/** `--system TEXT` or `--system @FILE` (the file's text). */
function parseSystem(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let text = value;
  if (value.startsWith("@")) {
    try {
      text = readFileSync(value.slice(1), "utf8");
    } catch (error) {
      throw new HookboxError("USAGE", `--system ${value}: cannot read the file: ${(error as Error).message}`);
    }
  }
  if (text.length > MAX_SYSTEM_CHARS) throw new HookboxError("USAGE", `--system: the text is longer than ${MAX_SYSTEM_CHARS} characters`);
  return text;
}

function finiteNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new HookboxError("USAGE", `--${flag} must be a number, got "${value}"`);
  return n;
}

/** `--temperature`, `--max-output-tokens`, `--top-p`, `--tool-choice`, `--stop-sequence`, `--seed`, checked as a request's are. */
function parseModelSettings(v: Record<string, string | string[] | boolean | undefined>): ModelSettingsInput | undefined {
  const one = (flag: string) => v[flag] as string | undefined;
  const choice = one("tool-choice");
  const raw = {
    temperature: finiteNumber("temperature", one("temperature")),
    maxOutputTokens: finiteNumber("max-output-tokens", one("max-output-tokens")),
    topP: finiteNumber("top-p", one("top-p")),
    seed: finiteNumber("seed", one("seed")),
    stopSequences: v["stop-sequence"] as string[] | undefined,
    toolChoice:
      choice === undefined || ["auto", "none", "required"].includes(choice)
        ? choice
        : choice.startsWith("tool:")
          ? { type: "tool", toolName: choice.slice("tool:".length) }
          : choice,
  };
  const settings = Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== undefined));
  if (Object.keys(settings).length === 0) return undefined;
  const parsed = ModelSettingsInput.safeParse(settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const flag = { toolChoice: "tool-choice", stopSequences: "stop-sequence", maxOutputTokens: "max-output-tokens", topP: "top-p" }[
      String(issue.path[0])
    ];
    const message = flag === "tool-choice" ? "expected auto, none, required or tool:NAME" : issue.message;
    throw new HookboxError("USAGE", `--${flag ?? String(issue.path[0])}: ${message}`);
  }
  return settings as ModelSettingsInput;
}

function parseUserContextToModel(value: string | undefined): UserContextToModel | undefined {
  if (value === undefined) return undefined;
  const policy = value === "request" || value === "none" ? value : value.split(",").map((field) => field.trim());
  const parsed = UserContextToModelInput.safeParse(policy);
  if (!parsed.success) throw new HookboxError("USAGE", `--user-context-to-model: ${parsed.error.issues[0].message}`);
  return parsed.data;
}

/** `--context-tokens N`, `--context-bytes N`, `--summarize-context`: the run's context options (docs/loop.md). */
function contextFlags(v: { "context-tokens"?: string; "context-bytes"?: string; "summarize-context"?: boolean }): RunOptions["context"] {
  const maxTokens = positiveInt("context-tokens", v["context-tokens"]);
  const maxBytes = positiveInt("context-bytes", v["context-bytes"]);
  const context = {
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(maxBytes !== undefined ? { maxBytes } : {}),
    ...(v["summarize-context"] ? { summarize: true } : {}),
  };
  return Object.keys(context).length ? context : undefined;
}

/** `hookbox run` flags (docs/cli.md); any mistake is a USAGE error naming the flag. */
export function parseRunFlags(argv: string[]): RunFlags {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: runFlagSpec, allowPositionals: true, strict: true });
  } catch (error) {
    throw new HookboxError("USAGE", (error as Error).message);
  }
  const v = parsed.values;
  if (v.prompt === undefined) throw new HookboxError("USAGE", "--prompt TEXT is required");
  if (v.model === undefined) throw new HookboxError("USAGE", "--model is required (scripted:FILE or openai-compatible:MODEL)");
  const options: RunOptions = {
    maxIterations: positiveInt("max-iterations", v["max-iterations"]),
    maxParallelTools: positiveInt("max-parallel-tools", v["max-parallel-tools"]),
    toolTimeoutMs: positiveInt("tool-timeout-ms", v["tool-timeout-ms"]),
    pauseTimeoutMs: positiveInt("pause-timeout-ms", v["pause-timeout-ms"]),
    approvalTimeoutMs: positiveInt("approval-timeout-ms", v["approval-timeout-ms"]),
    maxFinishContinues: nonNegativeInt("max-finish-continues", v["max-finish-continues"]),
    step: v.step ?? false,
    tags: parseTags(v.tags),
    userContext: parseUserContext(v["user-context"]),
    maxTokens: positiveInt("max-tokens", v["max-tokens"]),
    maxCostUsd: positiveNumber("max-cost-usd", v["max-cost-usd"]),
    modelRetries: nonNegativeInt("model-retries", v["model-retries"]),
    system: parseSystem(v.system),
    modelSettings: parseModelSettings(v),
  };
  const context = contextFlags(v);
  if (context) options.context = context;
  if (v.traceparent !== undefined) {
    if (!parseTraceparent(v.traceparent))
      throw new HookboxError(
        "USAGE",
        `--traceparent "${v.traceparent}" is not a W3C traceparent (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)`,
      );
    options.traceparent = v.traceparent.trim();
  }
  const limits: Partial<SandboxLimits> = {};
  const memoryMb = positiveInt("memory-mb", v["memory-mb"]);
  const cpuMs = positiveInt("cpu-ms", v["cpu-ms"]);
  const wallMs = positiveInt("wall-ms", v["wall-ms"]);
  if (memoryMb !== undefined) limits.memoryMb = memoryMb;
  if (cpuMs !== undefined) limits.cpuMs = cpuMs;
  if (wallMs !== undefined) limits.wallMs = wallMs;
  if (v.session !== undefined && v.store === undefined) throw new HookboxError("USAGE", "--session needs --store FILE");
  if (v["summarize-context"] && v["guard-model"] === undefined)
    throw new HookboxError("USAGE", "--summarize-context needs --guard-model SPEC (the model that writes the summaries)");
  return {
    scripts: parsed.positionals,
    prompt: v.prompt,
    model: v.model,
    fallbackModel: v["fallback-model"],
    fallbackBaseUrl: v["fallback-base-url"],
    pricing: parsePricing(v.pricing),
    baseUrl: v["base-url"],
    apiKeyEnv: v["api-key-env"],
    hostTools: v["host-tools"],
    tenant: v.tenant ?? "default",
    json: v.json ?? false,
    store: v.store,
    session: v.session,
    limits,
    options,
    wall: wallModeFlag(v.wall),
    egress: v.egress ?? [],
    ...(v["guard-model"] !== undefined ? { guardModel: v["guard-model"] } : {}),
    ...(v["user-context-to-model"] !== undefined ? { userContextToModel: parseUserContextToModel(v["user-context-to-model"]) } : {}),
  };
}
