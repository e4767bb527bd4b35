import { describe, expect, it } from "vitest";
import { Response } from "undici";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { checkedEgress, TenantCapabilities, type TenantCapabilitiesOptions } from "../../src/capabilities/tenant-capabilities.js";
import {
  capabilityLimits,
  DEFAULT_CAPABILITY_LIMITS,
  KV_LIST_PAGE,
  KV_MAX_KEY_CHARS,
  KV_MAX_VALUE_BYTES,
} from "../../src/capabilities/grants.js";
import { ScriptedModel } from "../../src/engine/scripted.js";
import { MemoryKv } from "../../src/store/memory-kv.js";
import type { CapabilityEvent } from "../../src/events/types.js";
import { writeSteps } from "../helpers/harness.js";

/*
 * A tenant's grants, resolved once (src/capabilities/tenant-capabilities.ts, grants.ts), and the brokers of its
 * runs, in the test's own process: what is granted by default, what each grant gives a run, and what a run's end
 * does to its requests. docs/capabilities.md, "Grants".
 */

const runModel = (completed: number) => new ScriptedModel([{ text: `run model after ${completed}` }], "run-model");

function tenant(options: Partial<TenantCapabilitiesOptions> = {}) {
  return new TenantCapabilities({ tenant: "acme", runModel, ...options });
}

/** One run of `capabilities`: `call` sends a request; `events` is what the run was told. */
function run(capabilities: TenantCapabilities, hooks: Partial<Parameters<TenantCapabilities["forRun"]>[0]> = {}) {
  const events: CapabilityEvent[] = [];
  const { broker, close } = capabilities.forRun({ emit: (event) => events.push(event), ...hooks });
  const call = (request: Record<string, unknown>) => broker.serve({ script: "policy", text: JSON.stringify(request) });
  const code = (request: Record<string, unknown>) =>
    call(request).then(
      () => "ok",
      (error: { code: string; message: string }) => `${error.code}: ${error.message}`,
    );
  return { events, call, code, close };
}

describe("limits", () => {
  it("the documented defaults, and a tenant's limits over them field by field", () => {
    expect(DEFAULT_CAPABILITY_LIMITS).toEqual({
      maxFetchesPerRun: 50,
      fetchTimeoutMs: 5000,
      maxResponseBytes: 1_048_576,
      maxRequestBytes: 1_048_576,
      maxRedirects: 5,
      maxKvOpsPerRun: 1000,
      kvQuotaBytes: 10_485_760,
      maxModelCallsPerRun: 20,
      modelTimeoutMs: 30000,
      maxModelOutputTokens: 4096,
    });
    expect([KV_MAX_KEY_CHARS, KV_MAX_VALUE_BYTES, KV_LIST_PAGE]).toEqual([256, 65_536, 100]);
    expect(capabilityLimits(undefined)).toEqual(DEFAULT_CAPABILITY_LIMITS);
    expect(capabilityLimits({})).toEqual(DEFAULT_CAPABILITY_LIMITS);
    expect(capabilityLimits({ limits: { maxKvOpsPerRun: 2, modelTimeoutMs: 10 } })).toEqual({
      ...DEFAULT_CAPABILITY_LIMITS,
      maxKvOpsPerRun: 2,
      modelTimeoutMs: 10,
    });
    expect(tenant({ grants: { limits: { maxFetchesPerRun: 3 } } }).limits).toEqual({ ...DEFAULT_CAPABILITY_LIMITS, maxFetchesPerRun: 3 });
  });

  it("a run's broker enforces the tenant's limits", async () => {
    const limited = run(tenant({ grants: { limits: { maxKvOpsPerRun: 1 } } }));
    expect(await limited.code({ kind: "kv", op: "get", key: "a" })).toBe("ok");
    expect(await limited.code({ kind: "kv", op: "get", key: "a" })).toBe(
      "CAPABILITY_QUOTA: ctx.kv.get: this run already made 1 such calls, its limit",
    );
  });
});

describe("ctx.kv's grant", () => {
  it("is granted by default, in a store of this process shared by the tenant's runs", async () => {
    const capabilities = tenant();
    await run(capabilities).call({ kind: "kv", op: "set", key: "seen", value: 1 });
    expect(await run(capabilities).call({ kind: "kv", op: "get", key: "seen" })).toBe(1);
    // Another tenant's runtime has its own store.
    expect(await run(tenant()).call({ kind: "kv", op: "get", key: "seen" })).toBeNull();
  });

  it("lives in the store given", async () => {
    const kv = new MemoryKv();
    await run(tenant({ kv, grants: { kv: true } })).call({ kind: "kv", op: "set", key: "k", value: "v" });
    expect(await kv.get("acme", "k", Date.now())).toBe('"v"');
  });

  it("kv: false denies it, naming the operation", async () => {
    const kv = new MemoryKv();
    const denied = run(tenant({ kv, grants: { kv: false } }));
    expect(await denied.code({ kind: "kv", op: "set", key: "k", value: 1 })).toBe(
      "CAPABILITY_DENIED: ctx.kv.set: tenant acme is not granted ctx.kv",
    );
    expect(await kv.usedBytes("acme")).toBe(0);
  });

  it("a fixed clock (hookbox test's fixtures) decides expiry", async () => {
    const clock = { now: 1000 };
    const capabilities = tenant({ fixtures: { now: () => clock.now } });
    const first = run(capabilities);
    await first.call({ kind: "kv", op: "set", key: "k", value: 1, ttlMs: 100 });
    clock.now = 1099;
    expect(await first.call({ kind: "kv", op: "get", key: "k" })).toBe(1);
    clock.now = 1100;
    expect(await first.call({ kind: "kv", op: "get", key: "k" })).toBeNull();
  });
});

describe("the guard model's grant", () => {
  const prompt = { kind: "model", prompt: "judge" };

  it("none: ctx.model.generate is denied and there is no guard", async () => {
    const capabilities = tenant();
    expect(capabilities.guard).toBeUndefined();
    expect(await run(capabilities).code(prompt)).toBe("CAPABILITY_DENIED: ctx.model.generate: tenant acme has no guardModel granted");
  });

  it('"run": a fresh instance of the run\'s own model, made from its first inference', async () => {
    const made: number[] = [];
    const capabilities = tenant({
      grants: { guardModel: "run" },
      runModel: (completed) => (made.push(completed), runModel(completed)),
    });
    expect(await run(capabilities).call(prompt)).toMatchObject({ text: "run model after 0" });
    expect(made).toEqual([0]);
    expect(capabilities.guard!().modelId).toBe("run-model");
  });

  it("a model spec: made by its factory (a scripted file here)", async () => {
    const capabilities = tenant({ grants: { guardModel: { kind: "scripted", file: writeSteps([{ text: "SPEC GUARD" }]) } } });
    expect(await run(capabilities).call(prompt)).toMatchObject({ text: "SPEC GUARD" });
    // Each run gets a model replaying the file from its first step.
    expect(await run(capabilities).call(prompt)).toMatchObject({ text: "SPEC GUARD" });
  });

  it("a spec that cannot make a model is a CONFIG error naming the tenant, at creation", () => {
    let error: { code?: string; message?: string } = {};
    try {
      tenant({ grants: { guardModel: { kind: "scripted", file: "/nonexistent/guard.json" } } });
    } catch (thrown) {
      error = thrown as typeof error;
    }
    expect(error.code).toBe("CONFIG");
    expect(error.message).toMatch(/^tenant acme: guardModel: scripted model \/nonexistent\/guard\.json: /);
  });

  it("a model given in code wins over the grant's spec, as an instance or a factory", async () => {
    const instance: LanguageModelV4 = new ScriptedModel([{ text: "INSTANCE" }], "given");
    const byInstance = tenant({ guardModel: instance, grants: { guardModel: "run" } });
    expect(await run(byInstance).call(prompt)).toMatchObject({ text: "INSTANCE" });
    expect(byInstance.guard!()).toBe(instance);
    let made = 0;
    const factory = () => (made++, new ScriptedModel([{ text: `FACTORY ${made}` }], "given"));
    const byFactory = tenant({ guardModel: factory, grants: { guardModel: "run" } });
    expect(await run(byFactory).call(prompt)).toMatchObject({ text: "FACTORY 1" });
    expect(byFactory.guard).toBe(factory);
  });

  it("the run's hooks see every guard call: its hold on the budget, its usage, its trace", async () => {
    const seen: string[] = [];
    const capabilities = tenant({ guardModel: new ScriptedModel([{ text: "OK", usage: { inputTokens: 2, outputTokens: 3 } }], "g") });
    const answer = await run(capabilities, {
      holdGuardBudget: (model, most) => (
        seen.push(`hold ${model} ${most.inputTokens}+${most.outputTokens}`),
        { release: () => seen.push("release") }
      ),
      onGuardUsage: (usage) => (seen.push(`usage ${usage.model} ${usage.inputTokens}+${usage.outputTokens}`), { costUsd: 0.5 }),
      traceGuard: (model, work) => (seen.push(`trace ${model}`), work(() => seen.push("answered"))),
    }).call(prompt);
    expect(answer).toEqual({ text: "OK", usage: { inputTokens: 2, outputTokens: 3 } });
    expect(seen).toEqual(["hold g 13+4096", "trace g", "answered", "release", "usage g 2+3"]);
  });
});

describe("a run's end", () => {
  it("aborts its requests in flight, and what they report after it is dropped", async () => {
    const capabilities = tenant({ guardModel: new ScriptedModel([{ text: "late", delayMs: 30_000 }], "slow") });
    const ended = run(capabilities);
    const pending = ended.code({ kind: "model", prompt: "p" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    ended.close();
    expect(await pending).toBe("CANCELLED: ctx.model.generate: the run ended");
    expect(ended.events).toEqual([]);
  });

  it("aborts its requests with one frozen AbortError shared by every run", async () => {
    const late = { text: "late", delayMs: 30_000 };
    const model = new ScriptedModel([late, late], "slow");
    const capabilities = tenant({ guardModel: model });
    const reasons: unknown[] = [];
    for (let index = 0; index < 2; index++) {
      const ended = run(capabilities);
      const pending = ended.code({ kind: "model", prompt: "p" });
      await new Promise((resolve) => setTimeout(resolve, 20));
      ended.close();
      expect(await pending).toBe("CANCELLED: ctx.model.generate: the run ended");
      reasons.push(model.calls.at(-1)?.abortSignal?.reason);
    }
    expect(reasons[0]).toMatchObject({ name: "AbortError", message: "the run ended" });
    expect(Object.isFrozen(reasons[0])).toBe(true);
    expect(reasons[1]).toBe(reasons[0]);
  });

  it("reports the refusals it counted past a spent count before it closes the stream", async () => {
    const limited = run(tenant({ grants: { limits: { maxKvOpsPerRun: 1 } } }));
    for (let index = 0; index < 4; index++) await limited.code({ kind: "kv", op: "get", key: "a" });
    limited.close();
    expect(limited.events.map((event) => [event.ok, event.errorCode, event.refusals])).toEqual([
      [true, undefined, undefined],
      [false, "CAPABILITY_QUOTA", undefined],
      [false, "CAPABILITY_QUOTA", 2],
    ]);
  });
});

describe("egress", () => {
  it("no egress grant (none, or an empty list): no rules, and ctx.fetch is denied naming the tenant", async () => {
    expect(checkedEgress("acme", undefined)).toBeUndefined();
    expect(checkedEgress("acme", {})).toBeUndefined();
    expect(checkedEgress("acme", { egress: [] })).toBeUndefined();
    expect(await run(tenant({ grants: { egress: [] } })).code({ kind: "fetch", url: "https://example.com/" })).toBe(
      "CAPABILITY_DENIED: ctx.fetch: https://example.com/ is denied: tenant acme grants no egress",
    );
  });

  it("a bad entry is a CONFIG error naming the tenant and the entry, at creation", () => {
    expect(() => tenant({ grants: { egress: ["https://ok.test/", "ftp://files.test/"] } })).toThrow(/^tenant acme: egress\[1\]: /);
  });

  it("an entry's header secrets are checked at creation, in the fixtures' environment when given", () => {
    const grants = { egress: [{ url: "https://guard.test/v1/", headers: { authorization: { env: "GUARD_KEY", prefix: "Bearer " } } }] };
    expect(() => tenant({ grants, fixtures: { env: { GUARD_KEY: "line\nbreak" } } })).toThrow(
      /^tenant acme: egress\[0\]: the egress entry https:\/\/guard\.test\/v1\/ adds header "authorization" from environment variable GUARD_KEY, whose value cannot be sent: it contains a line break$/,
    );
    expect(() => checkedEgress("acme", grants, { GUARD_KEY: "line\nbreak" })).toThrow(/^tenant acme: egress\[0\]: /);
    expect(checkedEgress("acme", grants, { GUARD_KEY: "fine" })).toHaveLength(1);
    expect(() => tenant({ grants, fixtures: { env: { GUARD_KEY: "fine" } } })).not.toThrow();
  });

  it("the fixtures' transport and environment serve ctx.fetch: the secret header is added from that environment", async () => {
    const sent: string[] = [];
    const capabilities = tenant({
      grants: { egress: [{ url: "https://guard.test/v1/", headers: { authorization: { env: "GUARD_KEY", prefix: "Bearer " } } }] },
      fixtures: {
        env: { GUARD_KEY: "sk-fixture" },
        fetchTransport: async (url, init) => {
          sent.push(`${init.method} ${url.href} ${init.headers.get("authorization")}`);
          return new Response("canned", { status: 200 });
        },
      },
    });
    expect(await run(capabilities).call({ kind: "fetch", url: "https://guard.test/v1/check" })).toMatchObject({
      status: 200,
      body: "canned",
    });
    expect(sent).toEqual(["GET https://guard.test/v1/check Bearer sk-fixture"]);
  });

  it("the runtime's resolver decides where a name leads", async () => {
    const asked: string[] = [];
    const capabilities = tenant({
      grants: { egress: ["https://partner.test/api/"] },
      resolveHost: async (hostname) => (asked.push(hostname), [{ address: "127.0.0.1", family: 4 }]),
    });
    expect(await run(capabilities).code({ kind: "fetch", url: "https://partner.test/api/x" })).toMatch(
      /^CAPABILITY_DENIED: .*resolves to an address the egress entry https:\/\/partner\.test\/api\/ does not allow/,
    );
    expect(asked).toEqual(["partner.test"]);
  });
});
