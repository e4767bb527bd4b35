import type { LanguageModelV4 } from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import type { UserContext } from "../contracts/context.js";
import { isJson } from "../turns/json.js";
import type { Block, Turn } from "../turns/turn.js";
import { PayloadKeys, TurnDataKeys } from "../turns/keys.gen.js";
import { shareValue } from "../turns/shared-value.js";
import {
  DEFAULT_SANDBOX_LIMITS,
  type SandboxPool,
  type SandboxRun,
  type ScriptManifest,
  type ScriptSource,
  type TenantSandbox,
  type TenantSandboxOptions,
  type BundleVariant,
} from "../sandbox/api.js";
import type { RunDeployment } from "../store/policy-types.js";
import { modelFactory } from "../engine/model-spec.js";
import type { ProviderTools } from "../engine/infer.js";
import { normalizeModelSettings } from "../engine/model-settings.js";
import { startLoop, type LoopComponents, type RunAccounting } from "../loop/loop.js";
import type { EventLog } from "../loop/event-log.js";
import { checkToolResultSize, DEFAULT_RUN_BUDGETS } from "../loop/run-budget.js";
import { ToolRegistry, type RegisteredTool } from "../loop/tool-registry.js";
import { ToolSchemas } from "../schema/tool-schemas.js";
import { hostHookProvider, scriptHookProvider, type HookProvider } from "../loop/hook-provider.js";
import { hostMiddleware, scriptMiddleware } from "../loop/middleware-chain.js";
import type { RestartHandlers } from "../loop/context-restart.js";
import { newId } from "../loop/ids.js";
import { loadHostModule, type HostModule } from "./host-module.js";
import { DEFAULT_PAUSE_TIMEOUT_MS, loopLimits, mergeRunOptions } from "./run-defaults.js";
import type { RunHandle, StartRunRequest, TenantConfig, TenantRuntime } from "./types.js";
import { TenantCapabilities, type CapabilityFixtures } from "../capabilities/tenant-capabilities.js";
import type { ResolveHost } from "../capabilities/egress-connect.js";
import type { KvStore } from "../store/kv.js";
import type { Pricing } from "./usage.js";
import type { RunTrace } from "../telemetry/run-trace.js";
import { loadTracing, startRunTrace } from "../telemetry/tracing.js";
import { tracedHookProvider } from "../telemetry/traced-calls.js";
import { guardSummarizer } from "../capabilities/context-summary.js";
import { contextPolicy } from "../loop/context-window.js";

export interface TenantRuntimeExtras {
  /** Host code given in-process (library use) in addition to `config.hostToolsModule`. */
  host?: Partial<HostModule>;
  restartHandlers?: RestartHandlers;
  /** Stream model responses (doStream) instead of doGenerate. */
  stream?: boolean;
  /**
   * Any AI SDK language model (LanguageModelV4), or a factory called once per run with the number of
   * inferences a resumed run already made; overrides `config.model`.
   */
  model?: LanguageModelV4 | ((completedInferences: number) => LanguageModelV4);
  /** Where ctx.kv lives (the session store's `kv`); default: in this process. */
  kv?: KvStore;
  /** The model ctx.model.generate calls; overrides `config.capabilities.guardModel`. */
  guardModel?: LanguageModelV4 | (() => LanguageModelV4);
  /** As `model`, for the fallback; overrides `config.fallbackModel`. */
  fallbackModel?: LanguageModelV4 | ((completedInferences: number) => LanguageModelV4);
  /**
   * Tools the model's provider runs itself, by the name the model calls them (`{ web_search:
   * openai.tools.webSearch({}) }`, as generateText takes them): hooks observe their calls, the host never runs them.
   */
  providerTools?: ProviderTools;
  /** Overrides `config.pricing`. */
  pricing?: Pricing;
  /** Scripts from a deployment (src/policy/deployments.ts): versions, shadows, a sandbox of their own. */
  deployment?: DeploymentScripts;
  /**
   * How ctx.fetch resolves host names (default: the operating system's resolver). Its answers are checked
   * like any other (docs/capabilities.md); tests give a resolver of their own to play an attacker's DNS.
   */
  resolveHost?: ResolveHost;
  /** Called after every hook call (host or sandboxed, active or shadow) with its wall time: the server's metrics. */
  onHookTimed?(hook: string, durationMs: number): void;
}

/**
 * hookbox test's hooks into a runtime, on top of the library's extras. Not part of the library: src/index.ts offers
 * createTenantRuntime, whose extras are TenantRuntimeExtras, so the published types name none of these.
 */
export interface TestRuntimeExtras extends TenantRuntimeExtras {
  /** Canned ctx.fetch answers, a fixed clock and an environment for egress secrets, in place of the real ones (hookbox test). */
  capabilityFixtures?: CapabilityFixtures;
  /** Loads the scripts as this variant of their bundles (hookbox test: coverage counters, a fixed clock). */
  bundleVariant?: BundleVariant;
  /** Called with each run's sandbox view as the run ends, before its script contexts are dropped (hookbox test reads coverage). */
  onSandboxRunEnd?: (run: SandboxRun) => Promise<void>;
}

export interface DeploymentScripts {
  record: RunDeployment;
  /** The sandbox the deployment's scripts load in (one per deployment: two versions of a script never share one). */
  sandboxTenant: string;
  /** Version of each of `config.scripts`, in order. */
  versions: number[];
  shadow?: { sources: ScriptSource[]; versions: number[]; sandboxTenant: string };
}

/**
 * One tenant: its scripts loaded in its sandbox, its host tools, its model. Loading happens here,
 * once; each run then gets fresh sandbox contexts and a fresh model instance.
 */
/**
 * Where a sandbox of the tenant goes: its isolation mode and cordon, owned by the tenant (sharing its standing).
 * The tenant's own sandbox, a deployment's, a replay's and an upload check's all take these.
 */
export function tenantSandboxOptions(config: Pick<TenantConfig, "name" | "isolation" | "cordon">): TenantSandboxOptions {
  return {
    owner: config.name,
    ...(config.isolation ? { isolation: config.isolation } : {}),
    ...(config.cordon ? { cordon: config.cordon } : {}),
  };
}

/** A tenant's runtime (the library's entry, src/index.ts). */
export function createTenantRuntime(config: TenantConfig, pool: SandboxPool, extras: TenantRuntimeExtras = {}): Promise<TenantRuntime> {
  return openTenantRuntime(config, pool, extras);
}

/** The same, with hookbox test's hooks too. */
export async function openTenantRuntime(config: TenantConfig, pool: SandboxPool, extras: TestRuntimeExtras = {}): Promise<TenantRuntime> {
  const newModel = modelSource(extras.model, config.model)!;
  const newFallback = modelSource(extras.fallbackModel, config.fallbackModel);
  const pricing = extras.pricing ?? config.pricing;
  const tracing = await loadTracing();
  const fromModule = config.hostToolsModule ? await loadHostModule(config.hostToolsModule) : { tools: [], hooks: [], middleware: [] };
  const host: HostModule = {
    tools: [...fromModule.tools, ...(extras.host?.tools ?? [])],
    hooks: [...fromModule.hooks, ...(extras.host?.hooks ?? [])],
    middleware: [...fromModule.middleware, ...(extras.host?.middleware ?? [])],
  };
  const deployment = extras.deployment;
  const sandboxTenant = deployment?.sandboxTenant ?? config.name;
  // A deployment's sandbox is the tenant's: it shares the tenant's standing (docs/sandbox.md). Its shadow's
  // keeps a standing of its own, so a shadow's breach never moves the runs it shadows to the quarantine worker.
  const { owner: _owner, ...placement } = tenantSandboxOptions(config);
  const sandbox: TenantSandbox | undefined = config.scripts.length
    ? pool.tenant(sandboxTenant, config.limits, tenantSandboxOptions(config))
    : undefined;
  const manifests: ScriptManifest[] = sandbox
    ? await sandbox.load(config.scripts, extras.bundleVariant ? { variant: extras.bundleVariant } : {})
    : [];
  const schemas = new ToolSchemas(); // this tenant's own: compiled once, on first use, for all its runs
  // Duplicate names and broken schemas fail at load, not at the first run; the tools do not change between runs,
  // so their turn record is checked and frozen once here and shared by every run.
  const toolDefinitions = shareValue(TurnDataKeys.toolDefinitions, buildRegistry(host, manifests, schemas, undefined).turnDefinitions());
  const shadow = deployment?.shadow?.sources.length ? deployment.shadow : undefined;
  const shadowSandbox = shadow && pool.tenant(shadow.sandboxTenant, config.limits, placement);
  const shadowManifests = shadowSandbox ? await shadowSandbox.load(shadow.sources) : [];
  // At the run's end, shadow chains in flight get at most their own wall limit per shadow script, plus a margin.
  const shadowWaitMs = (config.limits?.wallMs ?? DEFAULT_SANDBOX_LIMITS.wallMs) * shadowManifests.length + 1000;
  const capabilities = new TenantCapabilities({
    tenant: config.name,
    grants: config.capabilities,
    runModel: newModel,
    ...(extras.kv ? { kv: extras.kv } : {}),
    ...(extras.guardModel ? { guardModel: extras.guardModel } : {}),
    ...(extras.resolveHost ? { resolveHost: extras.resolveHost } : {}),
    ...(extras.capabilityFixtures ? { fixtures: extras.capabilityFixtures } : {}),
  });

  const components =
    (runId: string, trace: RunTrace) =>
    async (events: EventLog, accounting: RunAccounting): Promise<LoopComponents> => {
      // Without export the hook providers stay as they are: the hook round trip pays nothing for tracing.
      const traced = (provider: HookProvider, bundleHash?: string, shadow = false) =>
        timedHookProvider(tracing ? tracedHookProvider(provider, trace, bundleHash, shadow) : provider, extras.onHookTimed);
      const granted = capabilities.forRun({
        emit: (event) => events.emit(event),
        // A guard call is counted like an inference of the run: its tokens, its cost by the tenant's pricing.
        onGuardUsage: (usage) => accounting.usage.record(usage.model, usage),
        // A guard call in flight holds what it may spend, so parallel calls cannot all pass an unspent budget.
        holdGuardBudget: (model, most) => accounting.usage.hold(model, most),
        traceGuard: (model, work) => accounting.trace.inference(model, (span) => work((usage) => span.answered(usage.model, usage))),
      });
      const run =
        sandbox && manifests.length
          ? await sandbox.openRun({
              runId,
              scripts: manifests,
              onLog: (entry) => events.emit({ type: "log", ...entry }),
              capabilities: granted.broker,
            })
          : undefined;
      const registry = buildRegistry(host, manifests, schemas, run);
      const shadowRun =
        shadowSandbox && (await shadowSandbox.openRun({ runId: `${runId}~shadow`, scripts: shadowManifests }).catch(() => undefined));
      return {
        ...(shadowRun
          ? {
              shadow: {
                hooks: shadowManifests.map((m, i) => traced(scriptHookProvider(m, shadowRun, shadow!.versions[i]), m.bundleHash, true)),
                waitMs: shadowWaitMs,
              },
            }
          : {}),
        registry,
        toolDefinitions,
        middleware: [
          ...host.middleware.map(hostMiddleware),
          ...manifests.flatMap((m) => m.middleware.map((name) => scriptMiddleware(m, name, run!))),
        ],
        hooks: [
          ...host.hooks.map((hooks) => traced(hostHookProvider(hooks))),
          ...manifests.map((m, i) => traced(scriptHookProvider(m, run!, deployment?.versions[i]), m.bundleHash)),
        ],
        close: async () => {
          granted.close();
          await shadowRun?.close().catch(() => undefined);
          if (run && extras.onSandboxRunEnd) await extras.onSandboxRunEnd(run).catch(() => undefined);
          await run?.close();
        },
        // Shadow scripts run on the tenant's behalf too: their CPU counts.
        sandboxCpuMs: () => (run?.cpuMs() ?? 0) + (shadowRun?.cpuMs() ?? 0),
        ...(capabilities.guard
          ? {
              summarizer: guardSummarizer({
                guard: capabilities.guard,
                limits: capabilities.limits,
                usage: accounting.usage,
                trace: accounting.trace,
              }),
            }
          : {}),
      };
    };

  return {
    name: config.name,
    ...(deployment ? { deployment: deployment.record } : {}),
    start(request: StartRunRequest): RunHandle {
      const options = mergeRunOptions(config.runDefaults, request.options);
      const runId = request.runId ?? newId("run");
      const now = Date.now();
      const userContext = { originalUserRequest: request.prompt, timestampMs: now, ...options.userContext } as UserContext;
      const resume = request.resumeFrom;
      const turn = resume ? resume.turn : newTurn(request.history, request.prompt);
      const trace = startRunTrace(tracing, { sessionId: request.sessionId, runId, tenant: config.name, traceparent: options.traceparent });
      return startLoop(turn, {
        model: newModel(resume?.iterations ?? 0),
        ...(newFallback ? { fallbackModel: newFallback(resume?.iterations ?? 0) } : {}),
        stream: extras.stream ?? config.stream,
        ...(extras.providerTools ? { providerTools: extras.providerTools } : {}),
        components: components(runId, trace),
        trace,
        usage: {
          ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
          ...(options.maxCostUsd !== undefined ? { maxCostUsd: options.maxCostUsd } : {}),
          ...(pricing ? { pricing } : {}),
        },
        limits: { ...loopLimits(options), budgets: { ...DEFAULT_RUN_BUDGETS, ...config.budgets } },
        context: contextPolicy(options.context),
        ids: {
          runId,
          sessionId: request.sessionId,
          inferenceId: resume?.inferenceId ?? newId("inf"),
          traceId: trace.traceId,
          turnId: turn.id,
        },
        prompt: request.prompt,
        userContext,
        ...(config.userContextToModel !== undefined ? { userContextToModel: config.userContextToModel } : {}),
        ...(options.system ? { system: options.system } : {}),
        ...(options.modelSettings ? { modelSettings: normalizeModelSettings(options.modelSettings) } : {}),
        tags: options.tags ?? {},
        ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
        step: { enabled: options.step ?? false, pauseTimeoutMs: options.pauseTimeoutMs ?? DEFAULT_PAUSE_TIMEOUT_MS },
        restartHandlers: extras.restartHandlers,
        persistence: request.persistence,
        ...(resume ? { resume: { nextSeq: resume.nextSeq, iterations: resume.iterations, usage: resume.usage } } : {}),
      });
    },
  };
}

/** A model given in code (an instance or a per-run factory) wins over the configured spec. */
function modelSource(
  given: TenantRuntimeExtras["model"],
  spec: TenantConfig["model"] | undefined,
): ((completedInferences: number) => LanguageModelV4) | undefined {
  if (given !== undefined) return typeof given === "function" ? given : () => given;
  return spec ? modelFactory(spec) : undefined;
}

/** The session's history (its blocks shared, never copied: they are immutable) and the run's user message. */
function newTurn(history: Turn | undefined, prompt: string): Turn {
  const user: Block = { id: newId("blk"), kind: "user", role: "user", payload: { [PayloadKeys.text]: prompt }, metadata: {} };
  if (!history) return { id: newId("turn"), blocks: [user], metadata: {}, data: {} };
  return { ...history, id: newId("turn"), blocks: [...history.blocks, user], metadata: { ...history.metadata }, data: { ...history.data } };
}

function hostTool(tool: HostModule["tools"][number]): RegisteredTool {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    origin: "host",
    owner: "host tools",
    ...(tool.timeoutMs !== undefined ? { timeoutMs: tool.timeoutMs } : {}),
    async invoke(args, ctx, signal, limits = {}) {
      const result = await tool.handler(args, ctx, { signal });
      if (result === undefined) return null;
      if (!isJson(result)) throw new HookboxError("TOOL_ERROR", `host tool ${tool.name} returned a value that is not JSON`);
      if (limits.maxResultBytes !== undefined) checkToolResultSize(tool.name, JSON.stringify(result).length, limits.maxResultBytes);
      return result;
    },
  };
}

/** Host and script tools in one registry; `run` is the sandbox run that serves script tools (none when only checking). */
function buildRegistry(host: HostModule, manifests: ScriptManifest[], schemas: ToolSchemas, run: SandboxRun | undefined): ToolRegistry {
  const registry = new ToolRegistry(schemas);
  for (const tool of host.tools) registry.add(hostTool(tool));
  for (const manifest of manifests) {
    for (const tool of manifest.tools) {
      registry.add({
        ...tool,
        origin: "script",
        owner: `script ${manifest.name}`,
        invoke: (args, ctx, _signal, limits) => {
          if (!run) throw new HookboxError("SANDBOX_CRASHED", `script tool ${tool.name} called without a sandbox run`);
          return run.callTool(manifest.name, tool.name, args, ctx, limits);
        },
      });
    }
  }
  return registry;
}

/** The provider with each call's wall time reported to `onTimed` (none: the provider itself). */
function timedHookProvider(provider: HookProvider, onTimed: TenantRuntimeExtras["onHookTimed"]): HookProvider {
  if (!onTimed) return provider;
  return {
    ...provider,
    has: (hook) => provider.has(hook),
    call: async (hook, payload) => {
      const started = performance.now();
      try {
        return await provider.call(hook, payload);
      } finally {
        onTimed(hook, performance.now() - started);
      }
    },
  };
}
