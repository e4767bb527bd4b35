import type { LanguageModelV4 } from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import { modelFactory } from "../engine/model-spec.js";
import type { KvStore } from "../store/kv.js";
import { MemoryKv } from "../store/memory-kv.js";
import { RunCapabilities, type RunCapabilitiesOptions } from "./broker.js";
import { parseEgress, type EgressRule } from "./egress.js";
import type { ResolveHost } from "./egress-connect.js";
import type { FetchTransport } from "./fetch.js";
import { checkEgressSecrets } from "./egress-secrets.js";
import { capabilityLimits, type CapabilityGrants, type CapabilityLimits } from "./grants.js";

/*
 * A tenant's grants, resolved once when its runtime is created (bad egress entries fail there), and the
 * per-run brokers made from them.
 */

export interface TenantCapabilitiesOptions {
  tenant: string;
  grants?: CapabilityGrants;
  /** Where ctx.kv lives (the session store); without one, a store in this process. */
  kv?: KvStore;
  /** The run's model factory, for `guardModel: "run"`. */
  runModel: (completedInferences: number) => LanguageModelV4;
  /** A guard model given in code (library use); wins over `grants.guardModel`. */
  guardModel?: LanguageModelV4 | (() => LanguageModelV4);
  /** Host names to addresses for ctx.fetch (default: the system's resolver). */
  resolveHost?: ResolveHost;
  /** What `hookbox test` puts in place of the outside world (src/testing/fixtures.ts). */
  fixtures?: CapabilityFixtures;
}

/**
 * The outside world as a test case gives it: canned ctx.fetch answers (every egress rule still applies), a
 * fixed clock (kv expiry), and the environment egress headers read their secrets from.
 */
export interface CapabilityFixtures {
  fetchTransport?: FetchTransport;
  now?: () => number;
  env?: NodeJS.ProcessEnv;
}

export type RunCapabilityHooks = Pick<RunCapabilitiesOptions, "emit" | "onGuardUsage" | "holdGuardBudget" | "traceGuard">;

export class TenantCapabilities {
  private readonly tenant: string;
  private readonly egress: EgressRule[] | undefined;
  private readonly kv: KvStore | undefined;
  private readonly guardModel: (() => LanguageModelV4) | undefined;
  private readonly resolveHost: ResolveHost | undefined;
  private readonly fixtures: CapabilityFixtures;
  readonly limits: CapabilityLimits;

  constructor(options: TenantCapabilitiesOptions) {
    const grants = options.grants ?? {};
    this.limits = capabilityLimits(grants);
    this.fixtures = options.fixtures ?? {};
    this.egress = checkedEgress(options.tenant, grants, this.fixtures.env ?? process.env);
    this.kv = grants.kv === false ? undefined : (options.kv ?? new MemoryKv());
    const given = options.guardModel;
    const spec = grants.guardModel;
    this.guardModel =
      given !== undefined
        ? typeof given === "function"
          ? given
          : () => given
        : spec === undefined
          ? undefined
          : spec === "run"
            ? () => options.runModel(0)
            : guardFactory(spec, options.tenant);
    this.tenant = options.tenant;
    this.resolveHost = options.resolveHost;
  }

  /** The tenant's guard model (ctx.model.generate's, also what summarizes a run's context); undefined when none is granted. */
  get guard(): (() => LanguageModelV4) | undefined {
    return this.guardModel;
  }

  /** The broker of one run; `close()` aborts what is in flight when the run ends. */
  forRun(hooks: RunCapabilityHooks): { broker: RunCapabilities; close: () => void } {
    const ended = new AbortController();
    const broker = new RunCapabilities({
      tenant: this.tenant,
      ...(this.egress ? { egress: this.egress } : {}),
      ...(this.kv ? { kv: this.kv } : {}),
      ...(this.guardModel ? { guardModel: this.guardModel } : {}),
      ...(this.resolveHost ? { resolveHost: this.resolveHost } : {}),
      ...(this.fixtures.fetchTransport ? { fetchTransport: this.fixtures.fetchTransport } : {}),
      ...(this.fixtures.now ? { now: this.fixtures.now } : {}),
      ...(this.fixtures.env ? { env: this.fixtures.env } : {}),
      limits: this.limits,
      emit: (event) => {
        // A request that outlives its run has no event stream to report to.
        if (!ended.signal.aborted) hooks.emit(event);
      },
      ...(hooks.onGuardUsage ? { onGuardUsage: hooks.onGuardUsage } : {}),
      ...(hooks.holdGuardBudget ? { holdGuardBudget: hooks.holdGuardBudget } : {}),
      ...(hooks.traceGuard ? { traceGuard: hooks.traceGuard } : {}),
      signal: ended.signal,
    });
    return {
      broker,
      close: () => {
        broker.close();
        ended.abort(RUN_ENDED);
      },
    };
  }
}

/**
 * Why every run's requests are aborted when it ends. Their readers only look at `signal.aborted` (each reports
 * CANCELLED), so one frozen exception serves every run: no DOMException with a captured stack per run, and no run
 * can change what another's requests are aborted with.
 */
const RUN_ENDED = Object.freeze(new DOMException("the run ended", "AbortError"));

function guardFactory(spec: Exclude<CapabilityGrants["guardModel"], undefined | "run">, tenant: string): () => LanguageModelV4 {
  try {
    const factory = modelFactory(spec);
    return () => factory(0);
  } catch (error) {
    throw new HookboxError("CONFIG", `tenant ${tenant}: guardModel: ${(error as Error).message}`);
  }
}

/**
 * The tenant's egress rules, each header's secret checked: a secret that could never be sent stops the tenant at
 * start, not at its first request (`hookbox serve` checks every tenant's before it listens).
 */
export function checkedEgress(
  tenant: string,
  grants: CapabilityGrants | undefined,
  env: NodeJS.ProcessEnv = process.env,
): EgressRule[] | undefined {
  if (!grants?.egress?.length) return undefined;
  const egress = parseEgress(grants.egress, `tenant ${tenant}: egress`);
  checkEgressSecrets(egress, env, `tenant ${tenant}: egress`);
  return egress;
}
