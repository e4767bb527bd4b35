import { Response } from "undici";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import { denied, matchEgress, parseEgress, parseRequestUrl, type EgressRule } from "../capabilities/egress.js";
import type { FetchTransport } from "../capabilities/fetch.js";
import type { CapabilityFixtures } from "../capabilities/tenant-capabilities.js";
import type { CapabilityGrants } from "../capabilities/grants.js";
import { ScriptedModel } from "../engine/scripted.js";
import { MemoryKv } from "../store/memory-kv.js";
import { DEFAULT_CAPABILITY_LIMITS } from "../capabilities/grants.js";
import type { Fixtures, Grants } from "./case-schema.js";

/*
 * A case's capability fixtures made real: the tenant's grants as production checks them, and the outside world
 * in place of the network, the store and the guard model. The broker that serves the script is production's
 * (src/capabilities/broker.ts): an egress list refuses a URL exactly as it would in production, bodies and
 * redirects are bounded as they would be, kv quotas hold. Only the last step (sending a request, reading the
 * store, asking a model) answers from the fixtures.
 */

/** A case's outside world, ready for one run. */
export interface CaseWorld {
  grants: CapabilityGrants;
  kv: MemoryKv | undefined;
  guardModel: LanguageModelV4 | undefined;
  capabilityFixtures: CapabilityFixtures;
  /** The case's clock, epoch ms (undefined: the real one). */
  clockMs: number | undefined;
}

/** The grants a case's scripts run under (as `hookbox run --egress --guard-model` or a serve config's tenant give them). */
export function caseGrants(grants: Grants): CapabilityGrants {
  return {
    ...(grants.egress ? { egress: grants.egress } : {}),
    // The guard's answers come from the case; the spec only has to say "granted".
    ...(grants.guardModel ? { guardModel: "run" as const } : {}),
    ...(grants.kv === false ? { kv: false } : {}),
  };
}

/** Fixtures that production would refuse or never use, each with its field (`fetch["https://..."]`). */
export function fixtureProblems(fixtures: Fixtures, grants: Grants): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  let rules: EgressRule[] = [];
  if (grants.egress?.length) {
    try {
      rules = parseEgress(grants.egress, "grants.egress");
    } catch (error) {
      return [{ field: "fetch", message: (error as Error).message }];
    }
  }
  for (const key of Object.keys(fixtures.fetch ?? {})) {
    const field = `fetch[${JSON.stringify(key)}]`;
    let url: URL;
    try {
      url = parseRequestUrl(fetchKey(key).url);
    } catch (error) {
      problems.push({ field, message: (error as Error).message });
      continue;
    }
    if (rules.length === 0) problems.push({ field, message: `ctx.fetch: ${url.href} is denied: the tenant grants no egress` });
    else if (matchEgress(rules, url) === undefined)
      problems.push({ field, message: denied(url, "it is not under any entry of the tenant's egress list").message });
  }
  if (fixtures.kv && grants.kv === false) problems.push({ field: "kv", message: "the tenant is not granted ctx.kv (grants.kv is false)" });
  if (fixtures.guard && !grants.guardModel)
    problems.push({ field: "guard", message: "the tenant grants no guard model: ctx.model.generate is denied (set grants.guardModel)" });
  return problems;
}

/** `"POST https://x"` or `"https://x"` (any method). */
function fetchKey(key: string): { method?: string; url: string } {
  const found = /^([A-Z]+)\s+(\S.*)$/.exec(key);
  return found ? { method: found[1]!, url: found[2]! } : { url: key };
}

/** The epoch ms of a clock fixture. */
export function clockMs(clock: Fixtures["clock"]): number | undefined {
  if (clock === undefined) return undefined;
  return typeof clock === "number" ? clock : Date.parse(clock);
}

/** The outside world of one case (or one test of hookbox/testing): fresh kv, its answers, its clock. */
export async function caseWorld(tenant: string, fixtures: Fixtures, grants: Grants): Promise<CaseWorld> {
  const now = clockMs(fixtures.clock);
  const granted = caseGrants(grants);
  const kv = grants.kv === false ? undefined : new MemoryKv();
  if (kv) {
    const nowMs = now ?? Date.now();
    for (const [key, value] of Object.entries(fixtures.kv ?? {}))
      await kv.set(tenant, key, JSON.stringify(value), { quotaBytes: DEFAULT_CAPABILITY_LIMITS.kvQuotaBytes, nowMs });
  }
  const guardModel = grants.guardModel
    ? new ScriptedModel(
        (fixtures.guard ?? []).map((answer) => (typeof answer === "string" ? { text: answer } : answer)),
        "test-guard",
        { keepCalls: 0 },
      )
    : undefined;
  return {
    grants: granted,
    kv,
    guardModel,
    clockMs: now,
    capabilityFixtures: {
      fetchTransport: cannedFetch(fixtures.fetch ?? {}),
      ...(now !== undefined ? { now: () => now } : {}),
      env: secretsEnvironment(granted),
    },
  };
}

/** Answers ctx.fetch from the case's canned responses; a request none answers fails as an unreachable host does. */
function cannedFetch(answers: NonNullable<Fixtures["fetch"]>): FetchTransport {
  const byUrl = new Map<string, { method?: string; answer: NonNullable<Fixtures["fetch"]>[string] }[]>();
  for (const [key, answer] of Object.entries(answers)) {
    const { method, url } = fetchKey(key);
    const href = new URL(url).href;
    const list = byUrl.get(href) ?? [];
    // A method-specific answer wins over an any-method one.
    if (method) list.unshift({ method, answer });
    else list.push({ answer });
    byUrl.set(href, list);
  }
  return async (url, init) => {
    const found = byUrl.get(url.href)?.find((entry) => entry.method === undefined || entry.method === init.method);
    if (found === undefined)
      throw new HookboxError(
        "CAPABILITY_FAILED",
        `ctx.fetch: ${url.href} failed: no fixture answers ${init.method} ${url.href} in this case`,
      );
    const { answer } = found;
    const headers: Record<string, string> = { ...answer.headers };
    let body = answer.body;
    if (answer.json !== undefined) {
      body = JSON.stringify(answer.json);
      headers["content-type"] ??= "application/json";
    }
    const status = answer.status ?? 200;
    const bodyless = status === 204 || status === 304 || (status >= 100 && status < 200) || init.method === "HEAD";
    return new Response(bodyless ? null : (body ?? ""), { status, headers });
  };
}

/** The environment egress headers read their secrets from: the real one, with a stand-in for each secret not set. */
function secretsEnvironment(grants: CapabilityGrants): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const entry of grants.egress ?? []) {
    if (typeof entry === "string") continue;
    for (const header of Object.values(entry.headers ?? {})) env[header.env] ??= `hookbox-test-${header.env}`;
  }
  return env;
}
