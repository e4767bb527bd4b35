import { describe, expect, it } from "vitest";
import { HookChain } from "../../src/loop/hook-chain.js";
import type { HookProvider } from "../../src/loop/hook-provider.js";
import type { EventBody } from "../../src/events/types.js";
import type { HookName } from "../../src/turns/keys.gen.js";
import type { OnHookError } from "../../src/sandbox/api.js";
import { HookboxError } from "../../src/errors.js";
import { beforePayload, common } from "../sandbox/helpers.js";

/*
 * The hook chain on its own, with providers that answer as told: what each decision, failure and policy
 * turns into (the outcome, and the hook-decision and log events a reader sees). The loop's tests run the
 * same chain with real scripts in the sandbox; these reach the details those leave implicit.
 */

type Answer = (payload: Record<string, unknown>) => unknown;

function provider(
  name: string,
  hooks: Partial<Record<HookName, Answer>>,
  extra: { onHookError?: OnHookError; version?: number; bundleHash?: string } = {},
): HookProvider {
  return {
    name,
    origin: "script",
    onHookError: extra.onHookError ?? "fail-closed",
    ...(extra.version !== undefined ? { version: extra.version } : {}),
    ...(extra.bundleHash !== undefined ? { bundleHash: extra.bundleHash } : {}),
    has: (hook) => typeof hooks[hook] === "function",
    call: async (hook, payload) => hooks[hook]!(payload as never) as never,
  };
}

function chainOf(providers: HookProvider[], options: { shadow?: boolean } = {}) {
  const events: EventBody[] = [];
  const chain = new HookChain(providers, { emit: (body: EventBody) => events.push(body) }, options);
  return { chain, events };
}

const call = { id: "call-1", name: "lookup", args: { q: 1 }, origin: "script" as const };
const errorPayload = { phase: "onToolError" as const, call, attempt: 1, error: { message: "boom" }, ...common };
const afterPayload = { phase: "afterToolCall" as const, call, attempt: 1, result: { v: 1 }, durationMs: 1, ...common };

describe("hook-decision events", () => {
  it("carry the script's version and bundle hash when it has them, shadow on a shadow chain, recheck on a re-check", async () => {
    const { chain, events } = chainOf([provider("p", { beforeToolCall: () => undefined }, { version: 3, bundleHash: "h1" })], {
      shadow: true,
    });
    await chain.beforeToolCall(beforePayload("lookup"), { recheck: true });
    expect(events).toEqual([
      {
        type: "hook-decision",
        hook: "beforeToolCall",
        script: "p",
        callId: "call-1",
        decision: { action: "none" },
        version: 3,
        bundleHash: "h1",
        shadow: true,
        recheck: true,
      },
    ]);
  });

  it("leave out what a provider and chain do not have, and a run hook's has no call id", async () => {
    const { chain, events } = chainOf([provider("p", { beforeRun: () => undefined })]);
    await chain.beforeRun({ phase: "beforeRun", prompt: "hi", ...common } as never);
    // Strictly: a key present as undefined is there for a library reader, who gets the event object itself.
    expect(events).toStrictEqual([{ type: "hook-decision", hook: "beforeRun", script: "p", decision: { action: "none" } }]);
  });
});

describe("a failing hook, by its onHookError policy", () => {
  const thrower = (policy: OnHookError, error: unknown = new Error("it broke")) =>
    provider(
      "p",
      {
        beforeToolCall: () => {
          throw error;
        },
      },
      { onHookError: policy },
    );

  it("fail-open: the call proceeds with its arguments, one decision names the error and a warning log says so", async () => {
    const { chain, events } = chainOf([thrower("fail-open")]);
    expect(await chain.beforeToolCall(beforePayload("lookup", { q: 1 }))).toEqual({ kind: "proceed", args: { q: 1 } });
    expect(events).toEqual([
      {
        type: "hook-decision",
        hook: "beforeToolCall",
        script: "p",
        callId: "call-1",
        decision: { action: "error", code: "SCRIPT_ERROR", message: "p: beforeToolCall failed: it broke", policy: "fail-open" },
      },
      { type: "log", script: "p", level: "warn", message: "fail-open: p: beforeToolCall failed: it broke" },
    ]);
  });

  it("fail-open on a shadow chain writes no log", async () => {
    const { chain, events } = chainOf([thrower("fail-open")], { shadow: true });
    await chain.beforeToolCall(beforePayload("lookup"));
    expect(events.map((event) => event.type)).toEqual(["hook-decision"]);
  });

  it("fail-closed: the call is blocked with the failure, keeping a host error's code and a message that already names the hook", async () => {
    const { chain } = chainOf([thrower("fail-closed", new HookboxError("SANDBOX_TIMEOUT", "policy: beforeToolCall exceeded its time"))]);
    expect(await chain.beforeToolCall(beforePayload("lookup"))).toEqual({
      kind: "blocked",
      error: { message: "policy: beforeToolCall exceeded its time", code: "SANDBOX_TIMEOUT" },
    });
  });

  it("abort-run: the run ends with the failure's message and code; a thrown non-error is read as text", async () => {
    const { chain } = chainOf([thrower("abort-run", "plain text")]);
    expect(await chain.beforeToolCall(beforePayload("lookup"))).toEqual({
      kind: "abort",
      reason: "p: beforeToolCall failed: plain text",
      errorCode: "SCRIPT_ERROR",
    });
  });

  it("afterToolCall fail-closed withholds the result; beforeFinish fail-closed fails the run; beforeRun fail-closed denies it", async () => {
    const failing = (hook: HookName) =>
      provider(
        "p",
        {
          [hook]: () => {
            throw new Error("nope");
          },
        },
        { onHookError: "fail-closed" },
      );
    expect(await chainOf([failing("afterToolCall")]).chain.afterToolCall(afterPayload as never)).toEqual({
      kind: "apply",
      result: undefined,
      error: { message: "result withheld: p: afterToolCall failed: nope", code: "SCRIPT_ERROR" },
      withheld: true,
    });
    expect(
      await chainOf([failing("beforeFinish")]).chain.beforeFinish({ phase: "beforeFinish", text: "t", continues: 0, ...common } as never),
    ).toEqual({
      kind: "failed",
      reason: "p: beforeFinish failed: nope",
      errorCode: "SCRIPT_ERROR",
    });
    expect(await chainOf([failing("beforeRun")]).chain.beforeRun({ phase: "beforeRun", prompt: "hi", ...common } as never)).toEqual({
      kind: "deny",
      reason: "p: beforeRun failed: nope",
      errorCode: "SCRIPT_ERROR",
    });
  });
});

describe("decisions that accumulate", () => {
  it("onToolError: retries from several hooks keep the longest backoff and the last arguments given; a later fail ends it", async () => {
    const { chain } = chainOf([
      provider("a", { onToolError: () => ({ action: "retry", backoffMs: 50, args: { q: 2 } }) }),
      provider("b", { onToolError: () => ({ action: "retry", backoffMs: 10 }) }),
    ]);
    expect(await chain.onToolError(errorPayload as never)).toEqual({ kind: "retry", backoffMs: 50, args: { q: 2 } });
    const seen: unknown[] = [];
    const { chain: second } = chainOf([
      provider("a", { onToolError: () => ({ action: "retry", args: { q: 3 } }) }),
      provider("b", {
        onToolError: (payload) => {
          seen.push((payload.call as { args: unknown }).args);
          return { action: "retry", backoffMs: 5, args: { q: 4 } };
        },
      }),
    ]);
    expect(await second.onToolError(errorPayload as never)).toEqual({ kind: "retry", backoffMs: 5, args: { q: 4 } });
    // The second hook saw the arguments the first one would retry with.
    expect(seen).toEqual([{ q: 3 }]);
    const { chain: third } = chainOf([
      provider("a", { onToolError: () => ({ action: "retry" }) }),
      provider("b", { onToolError: () => ({ action: "fail", error: "give up" }) }),
    ]);
    expect(await third.onToolError(errorPayload as never)).toEqual({ kind: "fail", error: "give up" });
    expect(await chainOf([provider("a", { onToolError: () => undefined })]).chain.onToolError(errorPayload as never)).toEqual({
      kind: "default",
    });
  });

  it("afterToolCall: a later hook sees the earlier one's result; an error string sets the error, null clears it", async () => {
    const seen: unknown[] = [];
    const { chain } = chainOf([
      provider("a", { afterToolCall: () => ({ result: { v: 2 }, error: "bad" }) }),
      provider("b", {
        afterToolCall: (payload) => {
          seen.push([payload.result, payload.error]);
          return { error: null };
        },
      }),
    ]);
    expect(await chain.afterToolCall(afterPayload as never)).toEqual({ kind: "apply", result: { v: 2 }, error: undefined });
    expect(seen).toEqual([[{ v: 2 }, { message: "bad" }]]);
  });

  it("beforeRun: each hook sees the prompt the one before it wrote; a hook that writes none keeps it; a deny ends it", async () => {
    const seen: unknown[] = [];
    const { chain } = chainOf([
      provider("a", { beforeRun: () => ({ prompt: "rewritten" }) }),
      provider("b", {
        beforeRun: (payload) => {
          seen.push(payload.prompt);
          return {};
        },
      }),
    ]);
    expect(await chain.beforeRun({ phase: "beforeRun", prompt: "hi", ...common } as never)).toEqual({
      kind: "proceed",
      prompt: "rewritten",
    });
    expect(seen).toEqual(["rewritten"]);
    const { chain: denying } = chainOf([
      provider("a", { beforeRun: () => ({ action: "deny", reason: "no" }) }),
      provider("b", { beforeRun: () => ({ prompt: "x" }) }),
    ]);
    expect(await denying.beforeRun({ phase: "beforeRun", prompt: "hi", ...common } as never)).toEqual({
      kind: "deny",
      reason: "a: no",
      errorCode: "RUN_DENIED",
    });
  });

  it("onToolError: an abort ends the chain at once, its reason naming the script", async () => {
    const { chain } = chainOf([
      provider("a", { onToolError: () => ({ action: "abort", reason: "give up" }) }),
      provider("b", { onToolError: () => ({ action: "retry" }) }),
    ]);
    expect(await chain.onToolError(errorPayload as never)).toEqual({ kind: "abort", reason: "a: give up" });
  });

  it("beforeToolCall: arguments equal as JSON to what a hook let through are not put before it again", async () => {
    const { chain, events } = chainOf([
      provider("a", { beforeToolCall: () => ({ action: "proceed", args: { q: 2 } }) }),
      // The same arguments, as another object: nothing new for "a" to check.
      provider("b", { beforeToolCall: () => ({ action: "proceed", args: { q: 2 } }) }),
    ]);
    expect(await chain.beforeToolCall(beforePayload("lookup", { q: 1 }))).toEqual({ kind: "proceed", args: { q: 2 } });
    expect(events.map((event) => [(event as { script: string }).script, (event as { recheck?: boolean }).recheck])).toEqual([
      ["a", undefined],
      ["b", undefined],
    ]);
  });

  it("beforeFinish: the first continue or abort ends the chain, naming its script", async () => {
    const payload = { phase: "beforeFinish", text: "t", continues: 0, ...common } as never;
    const { chain } = chainOf([
      provider("a", { beforeFinish: () => undefined }),
      provider("b", { beforeFinish: () => ({ action: "continue", message: "more" }) }),
    ]);
    expect(await chain.beforeFinish(payload)).toEqual({ kind: "continue", message: "more", script: "b" });
    const { chain: aborting } = chainOf([
      provider("a", { beforeFinish: () => ({ action: "abort", reason: "stop" }) }),
      provider("b", { beforeFinish: () => ({ action: "continue", message: "x" }) }),
    ]);
    expect(await aborting.beforeFinish(payload)).toEqual({ kind: "abort", reason: "a: stop" });
  });

  it("the other branches: each policy on each hook, an afterToolCall abort, an ask nobody can answer, an error kept when a later hook leaves it", async () => {
    const failing = (
      hook: HookName,
      policy: OnHookError,
      error: unknown = new HookboxError("SANDBOX_TIMEOUT", `p: ${hook} exceeded its time`),
    ) =>
      provider(
        "p",
        {
          [hook]: () => {
            throw error;
          },
        },
        { onHookError: policy },
      );
    const finish = { phase: "beforeFinish", text: "t", continues: 0, ...common } as never;
    const run = { phase: "beforeRun", prompt: "hi", ...common } as never;
    expect(await chainOf([failing("beforeFinish", "fail-closed")]).chain.beforeFinish(finish)).toEqual({
      kind: "failed",
      reason: "p: beforeFinish exceeded its time",
      errorCode: "SANDBOX_TIMEOUT",
    });
    expect(await chainOf([failing("beforeFinish", "abort-run")]).chain.beforeFinish(finish)).toEqual({
      kind: "abort",
      reason: "p: beforeFinish exceeded its time",
      errorCode: "SANDBOX_TIMEOUT",
    });
    expect(await chainOf([failing("beforeFinish", "fail-open")]).chain.beforeFinish(finish)).toEqual({ kind: "finish" });
    expect(await chainOf([failing("beforeRun", "abort-run")]).chain.beforeRun(run)).toEqual({
      kind: "deny",
      reason: "p: beforeRun exceeded its time",
      errorCode: "SANDBOX_TIMEOUT",
    });
    expect(await chainOf([failing("beforeRun", "fail-closed")]).chain.beforeRun(run)).toEqual({
      kind: "deny",
      reason: "p: beforeRun exceeded its time",
      errorCode: "SANDBOX_TIMEOUT",
    });
    expect(await chainOf([failing("afterToolCall", "abort-run")]).chain.afterToolCall(afterPayload as never)).toEqual({
      kind: "abort",
      reason: "p: afterToolCall exceeded its time",
      errorCode: "SANDBOX_TIMEOUT",
    });
    expect(await chainOf([failing("afterToolCall", "fail-open")]).chain.afterToolCall(afterPayload as never)).toEqual({
      kind: "apply",
      result: { v: 1 },
    });
    expect(await chainOf([failing("onToolError", "fail-open")]).chain.onToolError(errorPayload as never)).toEqual({ kind: "default" });
    expect(await chainOf([failing("onToolError", "fail-closed")]).chain.onToolError(errorPayload as never)).toEqual({ kind: "fail" });
    expect(await chainOf([failing("onToolError", "abort-run")]).chain.onToolError(errorPayload as never)).toEqual({
      kind: "abort",
      reason: "p: onToolError exceeded its time",
      errorCode: "SANDBOX_TIMEOUT",
    });
    expect(
      await chainOf([provider("a", { afterToolCall: () => ({ action: "abort", reason: "leak" }) })]).chain.afterToolCall(
        afterPayload as never,
      ),
    ).toEqual({
      kind: "abort",
      reason: "a: leak",
    });
    expect(
      await chainOf([provider("a", { beforeToolCall: () => ({ action: "ask", reason: "big" }) })]).chain.beforeToolCall(
        beforePayload("lookup"),
      ),
    ).toEqual({
      kind: "deny",
      reason: "a asked for an approval and nobody can answer here",
    });
    const { chain } = chainOf([
      provider("a", { afterToolCall: () => ({ error: "bad" }) }),
      provider("b", { afterToolCall: () => ({ result: { v: 3 } }) }),
    ]);
    expect(await chain.afterToolCall(afterPayload as never)).toEqual({ kind: "apply", result: { v: 3 }, error: { message: "bad" } });
  });
});
