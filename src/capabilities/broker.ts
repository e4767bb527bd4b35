import type { LanguageModelV4 } from "@ai-sdk/provider";
import { HookboxError, isHookboxError } from "../errors.js";
import type { CapabilityBroker } from "../sandbox/api.js";
import type { KvStore } from "../store/kv.js";
import type { Json } from "../turns/json.js";
import type { CapabilityEvent } from "../events/types.js";
import { brokeredFetch, type FetchTransport } from "./fetch.js";
import type { EgressRule } from "./egress.js";
import { systemResolver, type ResolveHost } from "./egress-connect.js";
import { generateWithGuard, mostGuardUsage } from "./guard-model.js";
import type { CapabilityLimits } from "./grants.js";
import { serveKv } from "./kv.js";
import { parseCapabilityRequest, type CapabilityRequest } from "./requests.js";

/*
 * One run's capabilities (docs/capabilities.md): validates each request, checks the grant and the run's
 * counts, does the I/O, and reports a `capability` event for every request, refused ones included, except
 * past a per-run count: there the first refusal of each kind is an event and later ones are counted, one
 * event per script and kind when the run ends (a script looping on a spent quota must not flood the
 * run's events). What a script receives is JSON; what it sees of a failure is a HookboxError's code and
 * message.
 */

/** The longest URL a `capability` event carries (the error the script gets names more). */
export const EVENT_URL_CHARS = 512;

export interface GuardUsage {
  model: string;
  inputTokens: number;
  outputTokens: number;
}

export interface RunCapabilitiesOptions {
  tenant: string;
  /** Undefined when the tenant grants no egress. */
  egress?: EgressRule[];
  /** Undefined when ctx.kv is not granted. */
  kv?: KvStore;
  /** The guard model for this run (made on first use); undefined when not granted. */
  guardModel?: () => LanguageModelV4;
  limits: CapabilityLimits;
  emit: (event: CapabilityEvent) => void;
  /** Every guard call's tokens, for the run's usage; returns their cost (USD) by the tenant's pricing. */
  onGuardUsage?: (usage: GuardUsage) => { costUsd: number };
  /**
   * Holds the most a guard call may spend against the run's budget while it is in flight (released when it
   * is answered or fails); a string says why the run may not spend more (its token or cost budget).
   */
  holdGuardBudget?: (model: string, most: { inputTokens: number; outputTokens: number }) => { release(): void } | string;
  /** Wraps each guard call in the run's trace (a span); `answered` records the model and its tokens on it. */
  traceGuard?: <T>(model: string, work: (answered: (usage: GuardUsage) => void) => Promise<T>) => Promise<T>;
  /** Aborted when the run ends: requests in flight stop. */
  signal: AbortSignal;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  /** Host names to addresses for ctx.fetch (default: the system's resolver). */
  resolveHost?: ResolveHost;
  /** How ctx.fetch sends a hop the egress list allowed (default: over the network; `hookbox test`: canned answers). */
  fetchTransport?: FetchTransport;
}

type Counted = "fetch" | "kv" | "model";

/** A request past its per-run count. */
class QuotaSpent extends HookboxError {}

export class RunCapabilities implements CapabilityBroker {
  private readonly counts: Record<Counted, number> = { fetch: 0, kv: 0, model: 0 };
  /** Refusals past a spent count after the first of their kind, by script and kind: reported at the run's end. */
  private readonly uncounted = new Map<string, { kind: Counted; script: string; refusals: number }>();
  private readonly spentReported = new Set<Counted>();
  private guard: LanguageModelV4 | undefined;

  constructor(private readonly options: RunCapabilitiesOptions) {}

  /** At the run's end: one event for each script and kind whose refusals past a spent count were counted, not reported. */
  close(): void {
    for (const { kind, script, refusals } of this.uncounted.values())
      this.options.emit({ type: "capability", kind, script, ok: false, durationMs: 0, errorCode: "CAPABILITY_QUOTA", refusals });
    this.uncounted.clear();
  }

  async serve(request: { script: string; text: string }): Promise<Json> {
    const limits = this.options.limits;
    const parsed = parseCapabilityRequest(request.text, limits.maxRequestBytes + 64 * 1024);
    const started = performance.now();
    const event: CapabilityEvent = { type: "capability", kind: parsed.kind, script: request.script, ok: false, durationMs: 0 };
    let counted = false;
    try {
      const answer = await this.dispatch(parsed, event);
      event.ok = true;
      return answer;
    } catch (error) {
      event.errorCode = isHookboxError(error) ? error.code : "CAPABILITY_FAILED";
      if (error instanceof QuotaSpent) counted = this.pastQuota(parsed.kind, request.script);
      throw error;
    } finally {
      event.durationMs = Math.round(performance.now() - started);
      if (!counted) this.options.emit(event);
    }
  }

  /** A refusal past a spent count: the first of its kind is reported (false); later ones are counted (true). */
  private pastQuota(kind: Counted, script: string): boolean {
    if (!this.spentReported.has(kind)) {
      this.spentReported.add(kind);
      return false;
    }
    const key = `${kind}\u0000${script}`;
    const entry = this.uncounted.get(key) ?? { kind, script, refusals: 0 };
    entry.refusals += 1;
    this.uncounted.set(key, entry);
    return true;
  }

  private count(kind: Counted, limit: number, what: string): void {
    this.counts[kind] += 1;
    if (this.counts[kind] > limit)
      throw new QuotaSpent("CAPABILITY_QUOTA", `${what}: this run already made ${limit} such calls, its limit`, { limit });
  }

  private async dispatch(request: CapabilityRequest, event: CapabilityEvent): Promise<Json> {
    const { limits, signal } = this.options;
    if (request.kind === "fetch") {
      const method = (request.method ?? "GET").toUpperCase();
      event.method = method;
      event.url = request.url.slice(0, EVENT_URL_CHARS);
      this.count("fetch", limits.maxFetchesPerRun, "ctx.fetch");
      if (this.options.egress === undefined || this.options.egress.length === 0)
        throw new HookboxError(
          "CAPABILITY_DENIED",
          `ctx.fetch: ${request.url.slice(0, 2000)} is denied: tenant ${this.options.tenant} grants no egress`,
          { url: request.url.slice(0, 2000) },
        );
      const answer = await brokeredFetch(
        { ...request, method },
        {
          rules: this.options.egress,
          limits,
          env: this.options.env ?? process.env,
          signal,
          resolve: this.options.resolveHost ?? systemResolver,
          ...(this.options.fetchTransport ? { transport: this.options.fetchTransport } : {}),
        },
        (url) => {
          event.url = url.slice(0, EVENT_URL_CHARS);
        },
      );
      event.status = answer.status;
      return answer as unknown as Json;
    }
    if (request.kind === "kv") {
      event.op = request.op;
      if ("key" in request) event.key = request.key;
      this.count("kv", limits.maxKvOpsPerRun, `ctx.kv.${request.op}`);
      if (this.options.kv === undefined)
        throw new HookboxError("CAPABILITY_DENIED", `ctx.kv.${request.op}: tenant ${this.options.tenant} is not granted ctx.kv`);
      return serveKv(this.options.kv, this.options.tenant, request, { quotaBytes: limits.kvQuotaBytes, now: this.options.now ?? Date.now });
    }
    this.count("model", limits.maxModelCallsPerRun, "ctx.model.generate");
    if (this.options.guardModel === undefined)
      throw new HookboxError("CAPABILITY_DENIED", `ctx.model.generate: tenant ${this.options.tenant} has no guardModel granted`);
    const guard = (this.guard ??= this.options.guardModel());
    event.model = guard.modelId;
    const hold = this.options.holdGuardBudget?.(guard.modelId, mostGuardUsage(request, limits.maxModelOutputTokens));
    if (typeof hold === "string") throw new HookboxError("CAPABILITY_QUOTA", `ctx.model.generate: ${hold}`);
    const call = (answered: (usage: GuardUsage) => void) =>
      generateWithGuard(guard, request, { timeoutMs: limits.modelTimeoutMs, signal, maxOutputTokens: limits.maxModelOutputTokens }).then(
        (answer) => {
          answered({ model: guard.modelId, ...answer.usage });
          return answer;
        },
      );
    let answer: Awaited<ReturnType<typeof call>>;
    try {
      answer = this.options.traceGuard ? await this.options.traceGuard(guard.modelId, call) : await call(() => {});
    } finally {
      // Given back in the same turn as the spent tokens are recorded: no other call is admitted in between.
      hold?.release();
    }
    const costUsd = this.options.onGuardUsage?.({ model: guard.modelId, ...answer.usage }).costUsd ?? 0;
    event.usage = { ...answer.usage, costUsd };
    return answer as unknown as Json;
  }
}
