import { describe, expect, it } from "vitest";
import { HookChain, type HookChainOptions } from "../../src/loop/hook-chain.js";
import type { HookProvider } from "../../src/loop/hook-provider.js";
import { Approvals } from "../../src/loop/approvals.js";
import { EventLog } from "../../src/loop/event-log.js";
import type { ApprovalAnswer, ChainVerdict } from "../../src/host/types.js";
import type { EventBody, HookboxEvent } from "../../src/events/types.js";
import type { HookName } from "../../src/turns/keys.gen.js";
import type { OnHookError } from "../../src/sandbox/api.js";
import { common } from "../sandbox/helpers.js";

/*
 * What the hook chain reports besides its outcome: the one verdict per evaluation that replay, the shadow report
 * and policy tests compare (docs/policy-lifecycle.md, "Verdicts"), the hook-decision events a policy author reads
 * for every hook (docs/events.md), an `ask` answered by a real approvals object, and the provider-run calls a hook
 * may only watch or abort (docs/loop.md).
 */

type Answer = (payload: Record<string, unknown>) => unknown;

function provider(name: string, hooks: Partial<Record<HookName, Answer>>, onHookError: OnHookError = "fail-closed"): HookProvider {
  return {
    name,
    origin: "script",
    onHookError,
    has: (hook) => typeof hooks[hook] === "function",
    call: async (hook, payload) => hooks[hook]!(payload as never) as never,
  };
}

const throwing = (message: string) => () => {
  throw new Error(message);
};

function chainOf(providers: HookProvider[], options: Omit<HookChainOptions, "onVerdict"> = {}) {
  const events: EventBody[] = [];
  const verdicts: ChainVerdict[] = [];
  const chain = new HookChain(
    providers,
    { emit: (body: EventBody) => events.push(body) },
    { ...options, onVerdict: (v) => verdicts.push(v) },
  );
  return { chain, events, verdicts };
}

/** The first attempt is 1 everywhere; attempt 3 shows the chain reports the payload's own. */
const call = { id: "call-7", name: "lookup", args: { q: 1 }, origin: "script" as const };
const beforeToolCall = { phase: "beforeToolCall" as const, call, attempt: 3, ...common };
const afterToolCall = { phase: "afterToolCall" as const, call, attempt: 3, result: { v: 1 }, durationMs: 1, ...common };
const onToolError = { phase: "onToolError" as const, call, attempt: 3, error: { message: "boom" }, ...common };
const beforeRun = { phase: "beforeRun" as const, prompt: "hi", ...common };
const beforeFinish = (continues: number) => ({ phase: "beforeFinish" as const, text: "t", continues, ...common });

type Hook = "beforeToolCall" | "afterToolCall" | "onToolError" | "beforeRun" | "beforeFinish";

/** The one verdict of `hook` on `payload` with a single hook answering `decision`, without its payload (checked by identity). */
async function verdictOf(hook: Hook, decision: unknown, payload: object): Promise<Omit<ChainVerdict, "payload">> {
  const { chain, verdicts } = chainOf([provider("a", { [hook]: () => decision })]);
  await (chain[hook] as (payload: never) => Promise<unknown>)(payload as never);
  expect(verdicts).toHaveLength(1);
  const { payload: given, ...rest } = verdicts[0]!;
  expect(given).toBe(payload);
  return rest;
}

describe("the verdict of each evaluation", () => {
  it("is reported once, under the call's id and attempt and the hook's name, with the last decision, on an active chain", async () => {
    const reported = (hook: Hook, verdict: string, decision: object) => ({
      hook,
      callId: "call-7",
      attempt: 3,
      verdict,
      decision,
      shadow: false,
    });
    const deny = { action: "deny", reason: "no" };
    expect(await verdictOf("beforeToolCall", deny, beforeToolCall)).toEqual(reported("beforeToolCall", "deny", deny));
    const rewrite = { result: { v: 2 } };
    expect(await verdictOf("afterToolCall", rewrite, afterToolCall)).toEqual(reported("afterToolCall", "rewrite", rewrite));
    const retry = { action: "retry", backoffMs: 5 };
    expect(await verdictOf("onToolError", retry, onToolError)).toEqual(reported("onToolError", "retry", retry));
  });

  it("of run hooks is reported under the call id `run`: beforeRun as attempt 1, each beforeFinish as continues + 1", async () => {
    const prompt = { prompt: "rewritten" };
    expect(await verdictOf("beforeRun", prompt, beforeRun)).toEqual({
      hook: "beforeRun",
      callId: "run",
      attempt: 1,
      verdict: "rewrite",
      decision: prompt,
      shadow: false,
    });
    const more = { action: "continue", message: "more" };
    expect(await verdictOf("beforeFinish", more, beforeFinish(2))).toEqual({
      hook: "beforeFinish",
      callId: "run",
      attempt: 3,
      verdict: "continue",
      decision: more,
      shadow: false,
    });
  });

  it("of a chain no hook answers is proceed (or default) with the decision none, and a shadow chain's says shadow", async () => {
    const { chain, verdicts } = chainOf([], { shadow: true });
    await chain.beforeToolCall(beforeToolCall as never);
    await chain.onToolError(onToolError as never);
    await chain.beforeFinish(beforeFinish(0) as never);
    expect(verdicts.map(({ hook, verdict, decision, shadow }) => ({ hook, verdict, decision, shadow }))).toEqual([
      { hook: "beforeToolCall", verdict: "proceed", decision: { action: "none" }, shadow: true },
      { hook: "onToolError", verdict: "default", decision: { action: "none" }, shadow: true },
      { hook: "beforeFinish", verdict: "proceed", decision: { action: "none" }, shadow: true },
    ]);
  });

  it("is error when a hook failure ended the chain (fail-closed or abort-run), never after a fail-open one", async () => {
    const verdictOf = async (hook: "beforeToolCall" | "afterToolCall" | "onToolError", policy: OnHookError) => {
      const { chain, verdicts } = chainOf([provider("p", { [hook]: throwing("it broke") }, policy)]);
      const payloads = { beforeToolCall, afterToolCall, onToolError };
      await chain[hook](payloads[hook] as never);
      return verdicts[0]!.verdict;
    };
    expect(await verdictOf("beforeToolCall", "fail-closed")).toBe("error");
    expect(await verdictOf("afterToolCall", "fail-closed")).toBe("error");
    expect(await verdictOf("onToolError", "fail-closed")).toBe("error");
    expect(await verdictOf("beforeToolCall", "abort-run")).toBe("error");
    expect(await verdictOf("afterToolCall", "abort-run")).toBe("error");
    expect(await verdictOf("onToolError", "abort-run")).toBe("error");
    expect(await verdictOf("beforeToolCall", "fail-open")).toBe("proceed");
    expect(await verdictOf("afterToolCall", "fail-open")).toBe("proceed");
    expect(await verdictOf("onToolError", "fail-open")).toBe("default");
    const run = chainOf([provider("p", { beforeRun: throwing("it broke") }, "abort-run")]);
    await run.chain.beforeRun(beforeRun as never);
    const finish = chainOf([provider("p", { beforeFinish: throwing("it broke") }, "fail-open")]);
    await finish.chain.beforeFinish(beforeFinish(0) as never);
    expect([run.verdicts[0]!.verdict, finish.verdicts[0]!.verdict]).toEqual(["error", "proceed"]);
  });

  it("is ask when a hook asked, whatever the answer and whether anybody could answer, unless a later hook skips or denies", async () => {
    const asking = provider("asker", { beforeToolCall: () => ({ action: "ask", reason: "big" }) });
    const unanswered = chainOf([asking]);
    await unanswered.chain.beforeToolCall(beforeToolCall as never);
    expect(unanswered.verdicts[0]!.verdict).toBe("ask");
    const approved = await answered([asking, provider("b", { beforeToolCall: () => undefined })], { decision: "approve" });
    expect(approved.verdicts[0]!.verdict).toBe("ask");
    const rejected = await answered([asking], { decision: "reject" });
    expect(rejected.verdicts[0]!.verdict).toBe("ask");
    const thenDenied = await answered([asking, provider("b", { beforeToolCall: () => ({ action: "deny", reason: "no" }) })], {
      decision: "approve",
    });
    expect(thenDenied.verdicts[0]!.verdict).toBe("deny");
    const thenSkipped = await answered([asking, provider("b", { beforeToolCall: () => ({ action: "skip", result: 1 }) })], {
      decision: "approve",
    });
    expect(thenSkipped.verdicts[0]!.verdict).toBe("skip");
  });
});

/** A chain with a real approvals object whose reviewer gives `answer` as soon as the approval is open. */
async function answered(providers: HookProvider[], answer: ApprovalAnswer, options: { signal?: AbortSignal } = {}) {
  const logged: HookboxEvent[] = [];
  let approvals: Approvals | undefined = undefined;
  const log = new EventLog(
    { sessionId: "s1", inferenceId: "i1" },
    {
      sink: (event) => {
        logged.push(event);
        if (event.type === "approval.requested") approvals!.answer(event.pauseId, answer);
      },
    },
  );
  approvals = new Approvals({ events: log, signal: new AbortController().signal, timeoutMs: 60_000, checkArgs: () => undefined });
  const verdicts: ChainVerdict[] = [];
  const chain = new HookChain(providers, log, { approvals, onVerdict: (v) => verdicts.push(v) });
  const outcome = await chain.beforeToolCall(beforeToolCall as never, options);
  return { outcome, verdicts, logged };
}

describe("an ask with somebody to answer it", () => {
  const asking = (extra: Record<string, unknown> = {}) =>
    provider("asker", { beforeToolCall: () => ({ action: "ask", reason: "refund over the cap", ...extra }) });

  it("puts the call, its arguments, the reason and the script that asked before the reviewer", async () => {
    const { logged } = await answered([asking()], { decision: "approve" });
    expect(logged.find((event) => event.type === "approval.requested")).toMatchObject({
      callId: "call-7",
      name: "lookup",
      args: { q: 1 },
      reason: "refund over the cap",
      script: "asker",
    });
  });

  it("approved: the call proceeds with the arguments the reviewer approved, and later hooks still see them", async () => {
    const seen: unknown[] = [];
    const later = provider("later", {
      beforeToolCall: (payload) => {
        seen.push((payload.call as { args: unknown }).args);
        return undefined;
      },
    });
    const { outcome } = await answered([asking(), later], { decision: "approve", args: { q: 2 } });
    expect(outcome).toEqual({ kind: "proceed", args: { q: 2 } });
    expect(seen).toEqual([{ q: 2 }]);
  });

  it("rejected: a deny saying the reviewer rejected it, with the reviewer's reason when there is one", async () => {
    expect((await answered([asking()], { decision: "reject", reason: "not today" })).outcome).toEqual({
      kind: "deny",
      reason: "rejected by the reviewer: not today",
    });
    expect((await answered([asking()], { decision: "reject" })).outcome).toEqual({ kind: "deny", reason: "rejected by the reviewer" });
  });

  it("unanswered within the hook's own timeoutMs: a deny that says so", async () => {
    const logged: HookboxEvent[] = [];
    const log = new EventLog({ sessionId: "s1", inferenceId: "i1" }, { sink: (event) => logged.push(event) });
    const approvals = new Approvals({ events: log, signal: new AbortController().signal, timeoutMs: 600_000, checkArgs: () => undefined });
    const chain = new HookChain([asking({ timeoutMs: 20 })], log, { approvals });
    expect(await chain.beforeToolCall(beforeToolCall as never)).toEqual({
      kind: "deny",
      reason: "no answer to the approval within 20 ms",
    });
  });

  it("ends when the call's own signal aborts (its batch stopped), with that signal's reason", async () => {
    const log = new EventLog({ sessionId: "s1", inferenceId: "i1" });
    const approvals = new Approvals({ events: log, signal: new AbortController().signal, timeoutMs: 600_000, checkArgs: () => undefined });
    const batch = new AbortController();
    batch.abort(new Error("another call aborted the run"));
    const chain = new HookChain([asking()], log, { approvals });
    await expect(chain.beforeToolCall(beforeToolCall as never, { signal: batch.signal })).rejects.toThrow("another call aborted the run");
  });
});

describe("hook-decision events of every hook", () => {
  it("name the hook, the script and the tool call (run hooks have none) for a decision and for a failure", async () => {
    const { chain, events } = chainOf([
      provider(
        "b",
        { afterToolCall: throwing("x"), onToolError: throwing("y"), beforeRun: throwing("z"), beforeFinish: throwing("w") },
        "fail-open",
      ),
      provider("a", {
        afterToolCall: () => ({ result: { v: 2 } }),
        onToolError: () => ({ action: "fail", error: "no" }),
        beforeFinish: () => undefined,
      }),
    ]);
    await chain.afterToolCall(afterToolCall as never);
    await chain.onToolError(onToolError as never);
    await chain.beforeRun(beforeRun as never);
    await chain.beforeFinish(beforeFinish(0) as never);
    const failure = (hook: string, message: string) => ({
      type: "hook-decision",
      hook,
      script: "b",
      ...(hook === "afterToolCall" || hook === "onToolError" ? { callId: "call-7" } : {}),
      decision: { action: "error", code: "SCRIPT_ERROR", message: `b: ${hook} failed: ${message}`, policy: "fail-open" },
    });
    expect(events.filter((event) => event.type === "hook-decision")).toStrictEqual([
      failure("afterToolCall", "x"),
      { type: "hook-decision", hook: "afterToolCall", script: "a", callId: "call-7", decision: { result: { v: 2 } } },
      failure("onToolError", "y"),
      { type: "hook-decision", hook: "onToolError", script: "a", callId: "call-7", decision: { action: "fail", error: "no" } },
      failure("beforeRun", "z"),
      failure("beforeFinish", "w"),
      { type: "hook-decision", hook: "beforeFinish", script: "a", decision: { action: "none" } },
    ]);
    expect(events.filter((event) => event.type === "log").map((event) => (event as { message: string }).message)).toEqual([
      "fail-open: b: afterToolCall failed: x",
      "fail-open: b: onToolError failed: y",
      "fail-open: b: beforeRun failed: z",
      "fail-open: b: beforeFinish failed: w",
    ]);
  });

  it("a failure's message names the script and hook once: a message that already names the hook is kept as it is", async () => {
    const { chain, events } = chainOf([provider("p", { onToolError: throwing("p: onToolError exceeded its time") }, "fail-open")]);
    await chain.onToolError(onToolError as never);
    expect(events[0]).toMatchObject({ decision: { message: "p: onToolError exceeded its time" } });
  });
});

describe("provider-run calls (docs/loop.md): hooks may only watch or abort", () => {
  const providerRun = { ...call, providerExecuted: true };
  const before = { ...beforeToolCall, call: providerRun };
  const after = { ...afterToolCall, call: providerRun };

  it("a beforeToolCall skip, deny, ask or argument rewrite is HOOK_CONTRACT, under the hook's onHookError", async () => {
    for (const decision of [
      { action: "skip", result: 1 },
      { action: "deny", reason: "no" },
      { action: "ask", reason: "sure?" },
      { action: "proceed", args: { q: 2 } },
    ]) {
      const { chain, events } = chainOf([provider("p", { beforeToolCall: () => decision })]);
      const outcome = await chain.beforeToolCall(before as never);
      expect(outcome).toMatchObject({ kind: "blocked", error: { code: "HOOK_CONTRACT" } });
      expect(events[0]).toMatchObject({
        hook: "beforeToolCall",
        decision: { action: "error", code: "HOOK_CONTRACT", policy: "fail-closed" },
      });
    }
    const { chain } = chainOf([provider("p", { beforeToolCall: () => ({ action: "skip", result: 1 }) }, "fail-open")]);
    expect(await chain.beforeToolCall(before as never)).toEqual({ kind: "proceed", args: { q: 1 } });
  });

  it("watching (nothing, or a proceed without arguments) and abort are allowed before and after", async () => {
    for (const decision of [undefined, { action: "proceed" }])
      expect(await chainOf([provider("p", { beforeToolCall: () => decision })]).chain.beforeToolCall(before as never)).toEqual({
        kind: "proceed",
        args: { q: 1 },
      });
    expect(
      await chainOf([provider("p", { beforeToolCall: () => ({ action: "abort", reason: "stop" }) })]).chain.beforeToolCall(before as never),
    ).toEqual({ kind: "abort", reason: "p: stop" });
    expect(await chainOf([provider("p", { afterToolCall: () => undefined })]).chain.afterToolCall(after as never)).toEqual({
      kind: "apply",
      result: { v: 1 },
    });
    expect(
      await chainOf([provider("p", { afterToolCall: () => ({ action: "abort", reason: "stop" }) })]).chain.afterToolCall(after as never),
    ).toEqual({ kind: "abort", reason: "p: stop" });
  });

  it("an afterToolCall result or error rewrite is HOOK_CONTRACT: fail-closed withholds the result", async () => {
    for (const decision of [{ result: { v: 2 } }, { error: "hidden" }]) {
      const { chain } = chainOf([provider("p", { afterToolCall: () => decision })]);
      expect(await chain.afterToolCall(after as never)).toMatchObject({ kind: "apply", withheld: true, error: { code: "HOOK_CONTRACT" } });
    }
  });
});
