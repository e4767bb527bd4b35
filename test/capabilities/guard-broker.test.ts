import { describe, expect, it } from "vitest";
import { RunCapabilities, type GuardUsage, type RunCapabilitiesOptions } from "../../src/capabilities/broker.js";
import { generateWithGuard, mostGuardUsage } from "../../src/capabilities/guard-model.js";
import { DEFAULT_CAPABILITY_LIMITS, type CapabilityLimits } from "../../src/capabilities/grants.js";
import { parseEgress } from "../../src/capabilities/egress.js";
import { Response } from "undici";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { ScriptedModel, type ScriptedStep } from "../../src/engine/scripted.js";
import { UsageMeter } from "../../src/loop/usage-meter.js";
import type { CapabilityEvent } from "../../src/events/types.js";

/*
 * ctx.model.generate on the host, in the test's own process: the guard call itself (src/capabilities/guard-model.ts)
 * against an in-process scripted model, and the run's broker holding each call's most against the run's budget
 * (a real UsageMeter, as the loop gives it). docs/capabilities.md, "ctx.model.generate"; and the broker's ctx.fetch
 * event, through a canned transport.
 */

const never = new AbortController().signal;
const options = (extra: Partial<Parameters<typeof generateWithGuard>[2]> = {}) => ({
  timeoutMs: 10_000,
  signal: never,
  maxOutputTokens: 4096,
  ...extra,
});

async function refusal(promise: Promise<unknown>) {
  return promise.then(
    (answer) => {
      throw new Error(`expected a refusal, got ${JSON.stringify(answer)}`);
    },
    (error: { code: string; message: string }) => ({ code: error.code, message: error.message }),
  );
}

describe("generateWithGuard: one guard inference", () => {
  it("sends messages then the prompt as a user message, without tools, and answers the text and tokens", async () => {
    const model = new ScriptedModel([{ text: "OK", usage: { inputTokens: 12, outputTokens: 3 } }], "guard-1");
    const answer = await generateWithGuard(
      model,
      {
        messages: [
          { role: "system", content: "Answer OK or ABUSIVE." },
          { role: "user", content: "first" },
          { role: "assistant", content: "noted" },
        ],
        prompt: "refund 900",
        maxTokens: 7,
      },
      options(),
    );
    expect(answer).toEqual({ text: "OK", usage: { inputTokens: 12, outputTokens: 3 } });
    const sent = model.calls[0];
    expect(sent.maxOutputTokens).toBe(7);
    expect(sent.tools ?? []).toEqual([]);
    const textOf = (message: (typeof sent.prompt)[number]) =>
      typeof message.content === "string" ? message.content : message.content.map((part) => ("text" in part ? part.text : "")).join("");
    expect(sent.prompt.map((message) => [message.role, textOf(message)])).toEqual([
      ["system", "Answer OK or ABUSIVE."],
      ["user", "first"],
      ["assistant", "noted"],
      ["user", "refund 900"],
    ]);
  });

  it("maxTokens is capped at maxModelOutputTokens; without one the cap is asked", async () => {
    const model = new ScriptedModel([{ text: "a" }, { text: "b" }, { text: "c" }]);
    await generateWithGuard(model, { prompt: "p", maxTokens: 100_000 }, options({ maxOutputTokens: 4096 }));
    await generateWithGuard(model, { prompt: "p" }, options({ maxOutputTokens: 300 }));
    await generateWithGuard(model, { prompt: "p", maxTokens: 299 }, options({ maxOutputTokens: 300 }));
    expect(model.calls.map((call) => call.maxOutputTokens)).toEqual([4096, 300, 299]);
  });

  it("an answer without text or token counts is empty text and zero tokens", async () => {
    const model = new ScriptedModel([{ reasoning: "thinking only" }]);
    expect(await generateWithGuard(model, { prompt: "p" }, options())).toEqual({ text: "", usage: { inputTokens: 0, outputTokens: 0 } });
  });

  it("neither prompt nor messages is CAPABILITY_INVALID, and the model is not called", async () => {
    const model = new ScriptedModel([{ text: "never" }]);
    for (const request of [{}, { messages: [] }, { maxTokens: 5 }])
      expect(await refusal(generateWithGuard(model, request, options()))).toEqual({
        code: "CAPABILITY_INVALID",
        message: "ctx.model.generate: give a prompt or messages",
      });
    expect(model.callCount).toBe(0);
  });

  it("a model slower than modelTimeoutMs is CAPABILITY_TIMEOUT naming the bound", async () => {
    const model = new ScriptedModel([{ text: "late", delayMs: 30_000 }]);
    expect(await refusal(generateWithGuard(model, { prompt: "p" }, options({ timeoutMs: 50 })))).toEqual({
      code: "CAPABILITY_TIMEOUT",
      message: "ctx.model.generate: the guard model took longer than 50 ms",
    });
  });

  it("the run ending aborts the call: CANCELLED", async () => {
    const model = new ScriptedModel([{ text: "late", delayMs: 30_000 }]);
    const ended = new AbortController();
    const call = refusal(generateWithGuard(model, { prompt: "p" }, options({ signal: ended.signal })));
    setTimeout(() => ended.abort(), 20);
    expect(await call).toEqual({ code: "CANCELLED", message: "ctx.model.generate: the run ended" });
  });

  it("a failing model is CAPABILITY_FAILED with its message", async () => {
    const model = new ScriptedModel([{ text: "only one" }]);
    await generateWithGuard(model, { prompt: "p" }, options());
    expect(await refusal(generateWithGuard(model, { prompt: "p" }, options()))).toEqual({
      code: "CAPABILITY_FAILED",
      message: "ctx.model.generate: the guard model failed: scripted model ran out of steps: inference 2 but the file has 1",
    });
  });
});

describe("generateWithGuard: a model that fails without an Error", () => {
  it("is CAPABILITY_FAILED quoting what it threw", async () => {
    const failing = (thrown: unknown): LanguageModelV4 => ({
      specificationVersion: "v4",
      provider: "test",
      modelId: "failing",
      supportedUrls: {},
      doGenerate: () => Promise.reject(thrown),
      doStream: () => Promise.reject(thrown),
    });
    expect(await refusal(generateWithGuard(failing(undefined), { prompt: "p" }, options()))).toEqual({
      code: "CAPABILITY_FAILED",
      message: "ctx.model.generate: the guard model failed: undefined",
    });
    expect(await refusal(generateWithGuard(failing(null), { prompt: "p" }, options()))).toEqual({
      code: "CAPABILITY_FAILED",
      message: "ctx.model.generate: the guard model failed: null",
    });
  });
});

describe("mostGuardUsage: what a call holds while in flight", () => {
  it("one token per UTF-8 byte of every message and the prompt, 8 per message; its output cap", () => {
    // "héllo" is 6 bytes, "€" 3.
    expect(
      mostGuardUsage(
        {
          messages: [
            { role: "system", content: "héllo" },
            { role: "user", content: "€" },
          ],
          prompt: "abc",
          maxTokens: 50,
        },
        4096,
      ),
    ).toEqual({ inputTokens: 6 + 8 + 3 + 8 + 3 + 8, outputTokens: 50 });
    expect(mostGuardUsage({ prompt: "" }, 4096)).toEqual({ inputTokens: 8, outputTokens: 4096 });
    expect(mostGuardUsage({ messages: [{ role: "user", content: "ab" }], maxTokens: 10_000 }, 4096)).toEqual({
      inputTokens: 10,
      outputTokens: 4096,
    });
    expect(mostGuardUsage({}, 100)).toEqual({ inputTokens: 0, outputTokens: 100 });
  });
});

/** A run's broker with a guard model and the loop's usage meter; `generate` sends one ctx.model.generate request. */
function guardRun(steps: ScriptedStep[], settings: { maxTokens?: number; limits?: Partial<CapabilityLimits>; modelId?: string } = {}) {
  const meter = new UsageMeter({
    ...(settings.maxTokens !== undefined ? { maxTokens: settings.maxTokens } : {}),
    pricing: { "guard-9": { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 } },
  });
  const events: CapabilityEvent[] = [];
  const held: { model: string; most: { inputTokens: number; outputTokens: number } }[] = [];
  const traced: { model: string; answered: GuardUsage[] }[] = [];
  let made = 0;
  const broker = new RunCapabilities({
    tenant: "guarded",
    limits: { ...DEFAULT_CAPABILITY_LIMITS, ...settings.limits },
    emit: (event) => events.push(event),
    signal: never,
    guardModel: () => {
      made += 1;
      return new ScriptedModel(steps, settings.modelId ?? "guard-9");
    },
    onGuardUsage: (usage) => ({ costUsd: meter.record(usage.model, usage).costUsd }),
    holdGuardBudget: (model, most) => {
      held.push({ model, most });
      return meter.hold(model, most);
    },
    traceGuard: async (model, work) => {
      const span = { model, answered: [] as GuardUsage[] };
      traced.push(span);
      return work((usage) => span.answered.push(usage));
    },
  } satisfies RunCapabilitiesOptions);
  const generate = (request: Record<string, unknown>) =>
    broker.serve({ script: "judge", text: JSON.stringify({ kind: "model", ...request }) });
  return { broker, meter, events, held, traced, generate, made: () => made };
}

const step = (outputTokens: number, delayMs = 0): ScriptedStep => ({ text: "OK", delayMs, usage: { inputTokens: 10, outputTokens } });

describe("the run's broker: guard calls in flight hold their budget", () => {
  it("parallel calls: each is admitted while spent plus held is within maxTokens, so the run overruns by at most one call", async () => {
    // Each call holds 4000 + 5 + 8 = 4013 tokens and spends 4010.
    const run = guardRun(Array(16).fill(step(4000, 50)), { maxTokens: 20_000 });
    const answers = await Promise.allSettled(Array.from({ length: 16 }, () => run.generate({ prompt: "judge", maxTokens: 4000 })));
    const admitted = answers.filter((answer) => answer.status === "fulfilled");
    expect(admitted).toHaveLength(5);
    const reasons = answers.flatMap((answer) => (answer.status === "rejected" ? [answer.reason as { code: string; message: string }] : []));
    expect(reasons[0]).toMatchObject({
      code: "CAPABILITY_QUOTA",
      message: "ctx.model.generate: the run used 0 tokens, and calls in flight may use 20065 more, past its limit maxTokens (20000)",
    });
    expect(new Set(reasons.map((reason) => reason.code))).toEqual(new Set(["CAPABILITY_QUOTA"]));
    expect(run.meter.tokensUsed).toBe(5 * 4010);
    expect(run.meter.tokensUsed).toBeLessThanOrEqual(20_000 + 4010);
    expect(run.held.every(({ model, most }) => model === "guard-9" && most.inputTokens === 13 && most.outputTokens === 4000)).toBe(true);
  });

  it("what a call held is given back when it is answered: calls one after another are admitted until the spent tokens pass the budget", async () => {
    const run = guardRun(Array(8).fill(step(90)), { maxTokens: 250 });
    // Each holds 4096 + 9 (more than the budget) but spends 100: held tokens are released each time.
    expect(await run.generate({ prompt: "p" })).toEqual({ text: "OK", usage: { inputTokens: 10, outputTokens: 90 } });
    await run.generate({ prompt: "p" });
    await run.generate({ prompt: "p" });
    expect(run.meter.tokensUsed).toBe(300);
    expect(await refusal(run.generate({ prompt: "p" }))).toEqual({
      code: "CAPABILITY_QUOTA",
      message: "ctx.model.generate: the run used 300 tokens, and calls in flight may use 0 more, past its limit maxTokens (250)",
    });
  });

  it("a call that fails gives back what it held too", async () => {
    // The model has one step: the second call fails, the third is still admitted (and fails the same way).
    const run = guardRun([step(1)], { maxTokens: 5000 });
    await run.generate({ prompt: "p" });
    expect((await refusal(run.generate({ prompt: "p" }))).code).toBe("CAPABILITY_FAILED");
    expect((await refusal(run.generate({ prompt: "p" }))).code).toBe("CAPABILITY_FAILED");
    expect(run.held).toHaveLength(3);
  });

  it("the hold uses the tenant's maxModelOutputTokens as the output cap", async () => {
    const run = guardRun([step(1), step(1)], { limits: { maxModelOutputTokens: 64 } });
    await run.generate({ prompt: "abcd", maxTokens: 1000 });
    await run.generate({ messages: [{ role: "user", content: "xy" }], maxTokens: 10 });
    expect(run.held.map(({ most }) => most)).toEqual([
      { inputTokens: 12, outputTokens: 64 },
      { inputTokens: 10, outputTokens: 10 },
    ]);
  });

  it("each call is an event with the model and its usage priced; the trace gets the model and its tokens; one model per run", async () => {
    const run = guardRun([step(3), step(4)]);
    await run.generate({ prompt: "p" });
    await run.generate({ prompt: "q" });
    expect(run.made()).toBe(1);
    expect(run.events.map(({ durationMs: _, ...event }) => event)).toEqual([
      {
        type: "capability",
        kind: "model",
        script: "judge",
        ok: true,
        model: "guard-9",
        usage: { inputTokens: 10, outputTokens: 3, costUsd: 16 },
      },
      {
        type: "capability",
        kind: "model",
        script: "judge",
        ok: true,
        model: "guard-9",
        usage: { inputTokens: 10, outputTokens: 4, costUsd: 18 },
      },
    ]);
    expect(run.traced).toEqual([
      { model: "guard-9", answered: [{ model: "guard-9", inputTokens: 10, outputTokens: 3 }] },
      { model: "guard-9", answered: [{ model: "guard-9", inputTokens: 10, outputTokens: 4 }] },
    ]);
    expect(run.meter.total).toEqual({ inputTokens: 20, outputTokens: 7, costUsd: 34 });
  });

  it("without hooks for budget, usage and trace, a call is still answered (cost 0)", async () => {
    const events: CapabilityEvent[] = [];
    const broker = new RunCapabilities({
      tenant: "plain",
      limits: DEFAULT_CAPABILITY_LIMITS,
      emit: (event) => events.push(event),
      signal: never,
      guardModel: () => new ScriptedModel([step(2)], "plain-guard"),
    });
    expect(await broker.serve({ script: "s", text: JSON.stringify({ kind: "model", prompt: "p" }) })).toEqual({
      text: "OK",
      usage: { inputTokens: 10, outputTokens: 2 },
    });
    expect(events[0]).toMatchObject({ ok: true, model: "plain-guard", usage: { inputTokens: 10, outputTokens: 2, costUsd: 0 } });
  });

  it("maxModelCallsPerRun: the call past it is CAPABILITY_QUOTA, before the model is made", async () => {
    const run = guardRun([step(1), step(1)], { limits: { maxModelCallsPerRun: 1 } });
    await run.generate({ prompt: "p" });
    expect(await refusal(run.generate({ prompt: "p" }))).toEqual({
      code: "CAPABILITY_QUOTA",
      message: "ctx.model.generate: this run already made 1 such calls, its limit",
    });
    expect(run.held).toHaveLength(1);
  });

  it("a malformed call holds nothing and fails as CAPABILITY_INVALID", async () => {
    const run = guardRun([step(1)], { maxTokens: 100 });
    expect(await refusal(run.generate({}))).toEqual({
      code: "CAPABILITY_INVALID",
      message: "ctx.model.generate: give a prompt or messages",
    });
    expect(run.events.at(-1)).toMatchObject({ ok: false, errorCode: "CAPABILITY_INVALID", model: "guard-9" });
    // It held while in flight and gave it back: the next call is admitted.
    expect(await run.generate({ prompt: "p" })).toMatchObject({ text: "OK" });
  });

  it("a guard model that cannot be made fails the call; its event says CAPABILITY_FAILED", async () => {
    const events: CapabilityEvent[] = [];
    const broker = new RunCapabilities({
      tenant: "broken-guard",
      limits: DEFAULT_CAPABILITY_LIMITS,
      emit: (event) => events.push(event),
      signal: never,
      guardModel: () => {
        throw new Error("no API key");
      },
    });
    await expect(broker.serve({ script: "s", text: JSON.stringify({ kind: "model", prompt: "p" }) })).rejects.toThrow("no API key");
    expect(events).toMatchObject([{ kind: "model", ok: false, errorCode: "CAPABILITY_FAILED" }]);
  });

  it("without a guard model granted: CAPABILITY_DENIED, and the call still counts", async () => {
    const events: CapabilityEvent[] = [];
    const broker = new RunCapabilities({
      tenant: "no-guard",
      limits: { ...DEFAULT_CAPABILITY_LIMITS, maxModelCallsPerRun: 1 },
      emit: (event) => events.push(event),
      signal: never,
    });
    const send = () => refusal(broker.serve({ script: "s", text: JSON.stringify({ kind: "model", prompt: "p" }) }));
    expect(await send()).toEqual({ code: "CAPABILITY_DENIED", message: "ctx.model.generate: tenant no-guard has no guardModel granted" });
    expect((await send()).code).toBe("CAPABILITY_QUOTA");
    expect(events.map((event) => [event.kind, event.errorCode])).toEqual([
      ["model", "CAPABILITY_DENIED"],
      ["model", "CAPABILITY_QUOTA"],
    ]);
  });
});

describe("the run's broker: ctx.fetch's event", () => {
  const egress = parseEgress([{ url: "https://partner.test/api/" }], "egress");
  function fetchRun(answer: (url: URL) => Response, limits: Partial<CapabilityLimits> = {}) {
    const events: CapabilityEvent[] = [];
    const sent: { url: string; method: string }[] = [];
    const broker = new RunCapabilities({
      tenant: "fetcher",
      egress,
      limits: { ...DEFAULT_CAPABILITY_LIMITS, ...limits },
      emit: (event) => events.push(event),
      signal: never,
      fetchTransport: async (url, init) => {
        sent.push({ url: url.href, method: init.method });
        return answer(url);
      },
    });
    const fetch = (request: Record<string, unknown>) => broker.serve({ script: "f", text: JSON.stringify({ kind: "fetch", ...request }) });
    return { events, sent, fetch };
  }

  it("names the method (upper-cased, GET by default), the last URL tried after redirects, and the status", async () => {
    const run = fetchRun((url) =>
      url.pathname === "/api/old"
        ? new Response(null, { status: 302, headers: { location: "/api/new" } })
        : new Response("hi", { status: 201 }),
    );
    expect(await run.fetch({ url: "https://partner.test/api/old" })).toMatchObject({ status: 201, body: "hi" });
    await run.fetch({ url: "https://partner.test/api/x", method: "delete" });
    expect(run.sent).toEqual([
      { url: "https://partner.test/api/old", method: "GET" },
      { url: "https://partner.test/api/new", method: "GET" },
      { url: "https://partner.test/api/x", method: "DELETE" },
    ]);
    expect(run.events.map(({ durationMs: _, ...event }) => event)).toEqual([
      { type: "capability", kind: "fetch", script: "f", ok: true, method: "GET", url: "https://partner.test/api/new", status: 201 },
      { type: "capability", kind: "fetch", script: "f", ok: true, method: "DELETE", url: "https://partner.test/api/x", status: 201 },
    ]);
  });

  it("an event's URL is cut at 512 characters; a refusal's message at 2000", async () => {
    const run = fetchRun(() => new Response("ok"));
    const long = `https://partner.test/api/${"q".repeat(3000)}`;
    await run.fetch({ url: long });
    expect(run.events[0].url).toBe(long.slice(0, 512));
    const events: CapabilityEvent[] = [];
    const ungranted = new RunCapabilities({
      tenant: "closed",
      egress: [],
      limits: DEFAULT_CAPABILITY_LIMITS,
      emit: (event) => events.push(event),
      signal: never,
    });
    const denied = await refusal(ungranted.serve({ script: "f", text: JSON.stringify({ kind: "fetch", url: long, method: "post" }) }));
    expect(denied).toEqual({
      code: "CAPABILITY_DENIED",
      message: `ctx.fetch: ${long.slice(0, 2000)} is denied: tenant closed grants no egress`,
    });
    expect(events[0]).toMatchObject({ ok: false, method: "POST", url: long.slice(0, 512), errorCode: "CAPABILITY_DENIED" });
  });

  it("a request's text may be its maxRequestBytes and 64 KiB more (the body's own bound is checked after); past that it is refused unread", async () => {
    const run = fetchRun(() => new Response("ok"), { maxRequestBytes: 1000 });
    const request = (bodyChars: number) => ({ url: "https://partner.test/api/a", method: "POST", body: "b".repeat(bodyChars) });
    const textLength = (bodyChars: number) => JSON.stringify({ kind: "fetch", ...request(bodyChars) }).length;
    expect(await refusal(run.fetch(request(2000)))).toEqual({
      code: "CAPABILITY_QUOTA",
      message: "ctx.fetch: the request body exceeds 1000 bytes",
    });
    const atLimit = 2000 + (1000 + 64 * 1024 - textLength(2000));
    expect((await refusal(run.fetch(request(atLimit)))).message).toBe("ctx.fetch: the request body exceeds 1000 bytes");
    expect(await refusal(run.fetch(request(atLimit + 1)))).toEqual({
      code: "CAPABILITY_QUOTA",
      message: `a capability request of ${1000 + 64 * 1024 + 1} characters exceeds the ${1000 + 64 * 1024}-character limit`,
    });
    expect(run.sent).toEqual([]);
  });

  it("an event's durationMs is the time the request took", async () => {
    const run = fetchRun(() => new Response("ok"));
    const before = performance.now();
    await run.fetch({ url: "https://partner.test/api/a" });
    const took = performance.now() - before;
    expect(run.events[0].durationMs).toBeGreaterThanOrEqual(0);
    expect(run.events[0].durationMs).toBeLessThanOrEqual(Math.ceil(took));
  });

  it("an entry's header secrets come from the environment the broker is given, else the process's", async () => {
    const withSecret = parseEgress(
      [{ url: "https://guard.test/v1/", headers: { authorization: { env: "HOOKBOX_TEST_GUARD_KEY", prefix: "Bearer " } } }],
      "egress",
    );
    const sent: (string | null)[] = [];
    const transport = async (_url: URL, init: { headers: Headers }) => (sent.push(init.headers.get("authorization")), new Response("ok"));
    const request = JSON.stringify({ kind: "fetch", url: "https://guard.test/v1/check" });
    const given = new RunCapabilities({
      tenant: "env",
      egress: withSecret,
      limits: DEFAULT_CAPABILITY_LIMITS,
      emit: () => {},
      signal: never,
      env: { HOOKBOX_TEST_GUARD_KEY: "from-given" },
      fetchTransport: transport,
    });
    await given.serve({ script: "s", text: request });
    process.env.HOOKBOX_TEST_GUARD_KEY = "from-process";
    try {
      const inherited = new RunCapabilities({
        tenant: "env",
        egress: withSecret,
        limits: DEFAULT_CAPABILITY_LIMITS,
        emit: () => {},
        signal: never,
        fetchTransport: transport,
      });
      await inherited.serve({ script: "s", text: request });
    } finally {
      delete process.env.HOOKBOX_TEST_GUARD_KEY;
    }
    expect(sent).toEqual(["Bearer from-given", "Bearer from-process"]);
  });

  it("names resolve through the broker's resolver, and a non-public answer is refused naming the entry", async () => {
    const asked: string[] = [];
    const broker = new RunCapabilities({
      tenant: "dns",
      egress,
      limits: DEFAULT_CAPABILITY_LIMITS,
      emit: () => {},
      signal: never,
      resolveHost: async (hostname) => (asked.push(hostname), [{ address: "169.254.169.254", family: 4 }]),
    });
    const denied = await refusal(
      broker.serve({ script: "s", text: JSON.stringify({ kind: "fetch", url: "https://partner.test/api/meta" }) }),
    );
    expect(denied.code).toBe("CAPABILITY_DENIED");
    expect(denied.message).toContain("resolves to an address the egress entry https://partner.test/api/ does not allow");
    expect(denied.message).not.toContain("169.254");
    expect(asked).toEqual(["partner.test"]);
  });

  it("maxFetchesPerRun counts every call, refused ones included", async () => {
    const run = fetchRun(() => new Response("ok"), { maxFetchesPerRun: 2 });
    await run.fetch({ url: "https://partner.test/api/a" });
    expect((await refusal(run.fetch({ url: "https://elsewhere.test/" }))).code).toBe("CAPABILITY_DENIED");
    expect(await refusal(run.fetch({ url: "https://partner.test/api/a" }))).toEqual({
      code: "CAPABILITY_QUOTA",
      message: "ctx.fetch: this run already made 2 such calls, its limit",
    });
    expect(run.sent).toHaveLength(1);
  });
});
