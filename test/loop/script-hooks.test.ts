import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harness, ofType, writeScripts } from "../helpers/harness.js";
import { createSandboxPool } from "../../src/sandbox/index.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import { PayloadKeys } from "../../src/turns/keys.gen.js";
import type { ScriptedStep } from "../../src/engine/scripted.js";

let pool: SandboxPool;
beforeAll(() => {
  pool = createSandboxPool();
});
afterAll(async () => pool.close());

/** A host tool that counts its executions and can fail its first N attempts. */
function counted(name: string, failFirst = 0) {
  const calls: unknown[] = [];
  const tool: HostTool = {
    name,
    description: name,
    parameters: { type: "object", properties: { id: { type: "string" } } },
    handler: (args) => {
      calls.push(args);
      if (calls.length <= failFirst) throw new Error(`${name} failure #${calls.length}`);
      return { id: args.id ?? null, secret: "s3cr3t" };
    },
  };
  return { tool, calls };
}

const oneCall = (name = "order", args: Record<string, unknown> = { id: "A1" }): ScriptedStep[] => [
  { toolCalls: [{ id: "c1", name, args: args as never }] },
  { text: "done" },
];

async function runScript(
  source: string,
  options: {
    steps?: ScriptedStep[];
    tools?: HostTool[];
    run?: Parameters<Awaited<ReturnType<typeof harness>>["run"]>[1];
    prompt?: string;
  } = {},
) {
  const h = await harness({
    steps: options.steps ?? oneCall(),
    host: { tools: options.tools ?? [] },
    scripts: writeScripts({ "policy.ts": source }),
    pool,
    tenant: `t-${Math.random().toString(36).slice(2)}`,
  });
  return h.run(options.prompt ?? "please look at order A1", options.run);
}

const toolUse = (turn: { blocks: { kind: string; payload: Record<string, unknown> }[] }) =>
  turn.blocks.find((b) => b.kind === "tool_use")?.payload;

describe("lifecycle hooks from sandboxed scripts", () => {
  it("baseline without hooks: the host tool runs once and the run completes", async () => {
    const t = counted("order");
    const { result } = await runScript(`import { defineScript } from "hookbox"; export default defineScript({});`, { tools: [t.tool] });
    expect(result.status).toBe("completed");
    expect(t.calls).toHaveLength(1);
  });

  it("an args rewrite and an after-transform are both visible in the tool_use result", async () => {
    const t = counted("order");
    const { result, events } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ hooks: {
        beforeToolCall: (p) => ({ action: "proceed", args: { id: p.call.args.id + "-rewritten" } }),
        afterToolCall: (p) => ({ result: { ...p.result, secret: "[redacted]" } }),
      }});`,
      { tools: [t.tool] },
    );
    expect(t.calls).toEqual([{ id: "A1-rewritten" }]);
    expect(toolUse(result.turn)?.[PayloadKeys.result]).toEqual({ id: "A1-rewritten", secret: "[redacted]" });
    expect(ofType(events, "hook-decision").map((d) => d.decision.action ?? "transform")).toEqual(["proceed", "transform"]);
  });

  it("skip: the tool does not run and the hook's result is used", async () => {
    const t = counted("order");
    const { result } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ hooks: { beforeToolCall: () => ({ action: "skip", result: { cached: true }, reason: "cache" }) } });`,
      { tools: [t.tool] },
    );
    expect(t.calls).toHaveLength(0);
    expect(toolUse(result.turn)?.[PayloadKeys.result]).toEqual({ cached: true });
    expect(result.status).toBe("completed");
  });

  it("deny: the tool does not run, the model sees the reason, the run goes on", async () => {
    const t = counted("order");
    const { result } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ hooks: { beforeToolCall: () => ({ action: "deny", reason: "over limit" }) } });`,
      { tools: [t.tool] },
    );
    expect(t.calls).toHaveLength(0);
    expect(JSON.stringify(toolUse(result.turn)?.[PayloadKeys.error])).toContain("over limit");
    expect(result.status).toBe("completed");
    expect(result.iterations).toBe(2);
  });

  it("abort in beforeToolCall: status aborted, the tool does not run", async () => {
    const t = counted("order");
    const { result } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ hooks: { beforeToolCall: () => ({ action: "abort", reason: "fraud suspected" }) } });`,
      { tools: [t.tool] },
    );
    expect(result.status).toBe("aborted");
    expect(result.reason).toContain("fraud suspected");
    expect(t.calls).toHaveLength(0);
  });

  it("retry once then success: the tool ran twice", async () => {
    const t = counted("order", 1);
    const { result, events } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ hooks: { onToolError: (p) => p.attempt < 2 ? { action: "retry", backoffMs: 5 } : { action: "fail" } } });`,
      { tools: [t.tool] },
    );
    expect(t.calls).toHaveLength(2);
    expect(ofType(events, "tool-retry")).toHaveLength(1);
    expect(toolUse(result.turn)?.[PayloadKeys.result]).toMatchObject({ id: "A1" });
  });

  it("onToolError abort: the tool ran once and the run is aborted", async () => {
    const t = counted("order", 5);
    const { result } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ hooks: { onToolError: () => ({ action: "abort", reason: "give up" }) } });`,
      { tools: [t.tool] },
    );
    expect(t.calls).toHaveLength(1);
    expect(result.status).toBe("aborted");
  });

  it("fail-open: a throwing hook is logged and the tool runs", async () => {
    const t = counted("order");
    const { result, events } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ onHookError: "fail-open", hooks: { beforeToolCall() { throw new Error("hook bug"); } } });`,
      { tools: [t.tool] },
    );
    expect(t.calls).toHaveLength(1);
    expect(result.status).toBe("completed");
    expect(ofType(events, "hook-decision")[0].decision).toMatchObject({ action: "error", policy: "fail-open" });
  });

  it("fail-closed (default): a throwing hook stops the tool and the error names the hook", async () => {
    const t = counted("order");
    const { result } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ name: "strict-policy", hooks: { beforeToolCall() { throw new Error("hook bug"); } } });`,
      { tools: [t.tool] },
    );
    expect(t.calls).toHaveLength(0);
    const error = JSON.stringify(toolUse(result.turn)?.[PayloadKeys.error]);
    expect(error).toContain("strict-policy");
    expect(error).toContain("beforeToolCall");
    expect(result.status).toBe("completed");
  });

  it("a hook return outside its contract is HOOK_CONTRACT with the path, and fails closed", async () => {
    const t = counted("order");
    const { result, events } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ hooks: { beforeToolCall: () => ({ action: "explode" }) as any } });`,
      { tools: [t.tool] },
    );
    expect(t.calls).toHaveLength(0);
    expect(ofType(events, "hook-decision")[0].decision).toMatchObject({ action: "error", code: "HOOK_CONTRACT" });
    expect(result.status).toBe("completed");
  });

  it("abort-run: a throwing hook stops the run", async () => {
    const t = counted("order");
    const { result } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ onHookError: "abort-run", hooks: { afterToolCall() { throw new Error("audit down"); } } });`,
      { tools: [t.tool] },
    );
    expect(t.calls).toHaveLength(1);
    expect(result.status).toBe("aborted");
    expect(result.reason).toContain("audit down");
  });

  describe("retry bounds", () => {
    const retryForever = `import { defineScript } from "hookbox";
      export default defineScript({ hooks: { onToolError: () => ({ action: "retry", backoffMs: 1 }) } });`;

    it("attempts per call", async () => {
      const t = counted("order", 100);
      const { result } = await runScript(retryForever, { tools: [t.tool] });
      expect(t.calls).toHaveLength(3);
      const error = toolUse(result.turn)?.[PayloadKeys.error] as { code: string; message: string };
      expect(error.code).toBe("RETRY_BUDGET");
      expect(error.message).toContain("attempts per call (3)");
    });

    it("retries per run", async () => {
      const t = counted("order", 100);
      const steps: ScriptedStep[] = [
        {
          toolCalls: [
            { id: "a", name: "order", args: {} },
            { id: "b", name: "order", args: {} },
          ],
        },
        { text: "x" },
      ];
      const { result } = await runScript(retryForever, {
        tools: [t.tool],
        steps,
        run: { maxParallelTools: 1, retry: { maxRetriesPerRun: 3, maxAttemptsPerCall: 10 } },
      });
      expect(t.calls).toHaveLength(5); // 2 first attempts + 3 retries
      expect(JSON.stringify(result.turn.blocks.filter((b) => b.kind === "tool_use").map((b) => b.payload))).toContain(
        "retries per run (3)",
      );
    });

    it("time budget per run", async () => {
      const t = counted("order", 100);
      const { result } = await runScript(
        `import { defineScript } from "hookbox";
        export default defineScript({ hooks: { onToolError: () => ({ action: "retry", backoffMs: 60 }) } });`,
        { tools: [t.tool], run: { retry: { budgetMs: 100, maxAttemptsPerCall: 10 } } },
      );
      expect(t.calls).toHaveLength(2);
      expect(JSON.stringify(toolUse(result.turn))).toContain("retry time budget per run (100 ms)");
    });
  });

  it("every ctx field reaches middleware, tools and hooks; the user context survives the model's summary", async () => {
    const prompt = "My order A1 arrived broken, the box was crushed and I want a replacement not a refund";
    const { result, events } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({
        middleware: [async function spy(turn, next, ctx) { console.log("mw " + JSON.stringify(ctx)); return next(turn); }],
        tools: [{ name: "ticket", description: "file", parameters: { type: "object", properties: { summary: { type: "string" } } },
          async handler(args, ctx) { return { ctx }; } }],
        hooks: { beforeToolCall(p) { console.log("hook " + JSON.stringify(p)); } },
      });`,
      {
        steps: [{ toolCalls: [{ id: "c1", name: "ticket", args: { summary: "broken item" } }] }, { text: "ok" }],
        prompt,
        run: { tags: { tier: "gold" }, deadlineMs: Date.now() + 60_000 },
      },
    );
    expect(result.status).toBe("completed");
    const logs = ofType(events, "log").map((l) => l.message);
    const mw = JSON.parse(logs.find((m) => m.startsWith("mw "))!.slice(3));
    const hook = JSON.parse(logs.find((m) => m.startsWith("hook "))!.slice(5));
    const tool = (toolUse(result.turn)?.[PayloadKeys.result] as { ctx: Record<string, unknown> }).ctx;
    const common = ["sessionId", "inferenceId", "traceId", "turnId", "timestampMs", "deadlineMs", "tags", "userContext"];
    for (const key of [...common, "middlewareName"]) expect(mw, `middleware ctx.${key}`).toHaveProperty(key);
    for (const key of [...common, "toolName", "callId", "callName", "attempt"]) expect(tool, `tool ctx.${key}`).toHaveProperty(key);
    for (const key of [...common, "phase", "call", "attempt"]) expect(hook, `hook payload.${key}`).toHaveProperty(key);
    expect(hook.call).toMatchObject({ id: "c1", name: "ticket", args: { summary: "broken item" }, origin: "script" });
    expect((tool.userContext as { originalUserRequest: string }).originalUserRequest).toBe(prompt);
    expect(tool.tags).toEqual({ tier: "gold" });
  });

  it("a script tool's context restart is applied and its disable flag set", async () => {
    const { result, events } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ tools: [{ name: "docs", description: "d", parameters: { type: "object" },
        async handler() { return { type: "context_restart_docs", enhanced_context_item: { text: "policy" } }; } }] });`,
      { steps: [{ toolCalls: [{ id: "d1", name: "docs", args: {} }] }, { text: "ok" }] },
    );
    expect(ofType(events, "context-restart")[0]).toMatchObject({ applied: true, restartType: "docs" });
    expect(result.turn.data["hookbox.context_restart_disabled.docs@v1"]).toBe(true);
  });

  it("a slow script tool is cut off by the tool timeout and the failure goes through onToolError", async () => {
    const { result, events } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({
        tools: [{ name: "slow", description: "busy", parameters: { type: "object" },
          async handler() { const end = Date.now() + 150; while (Date.now() < end) {} return { done: true }; } }],
        hooks: { onToolError: (p) => { console.log("onToolError " + p.error.code); return { action: "fail", error: "too slow: " + p.error.message }; } },
      });`,
      { steps: [{ toolCalls: [{ id: "s1", name: "slow", args: {} }] }, { text: "ok" }], run: { toolTimeoutMs: 40 } },
    );
    expect(ofType(events, "tool-finished")[0].error?.code).toBe("TOOL_TIMEOUT");
    expect(ofType(events, "log").map((l) => l.message)).toContain("onToolError TOOL_TIMEOUT");
    expect(JSON.stringify(toolUse(result.turn))).toContain("too slow");
    expect(result.status).toBe("completed");
  });

  it("a middleware that returns nothing fails the run, naming the middleware", async () => {
    const { result } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ middleware: [async function forgetful(turn, next) { await next(turn); }] });`,
      { steps: [{ text: "hi" }] },
    );
    expect(result.status).toBe("failed");
    expect(result.reason).toContain("forgetful");
    expect(result.reason).toContain("returned nothing");
  });

  it("a middleware that throws fails the run, naming the middleware", async () => {
    const { result } = await runScript(
      `import { defineScript } from "hookbox";
      export default defineScript({ name: "mw-script", middleware: [async function explodes(turn, next) {
        throw new Error("middleware bug");
      }] });`,
      { steps: [{ text: "hi" }] },
    );
    expect(result.status).toBe("failed");
    expect(result.reason).toContain("explodes");
    expect(result.reason).toContain("middleware bug");
  });

  it("a middleware may rewrite the turn it passes to next", async () => {
    const { result } = await runScript(
      `
      import { defineScript } from "hookbox";
      export default defineScript({ middleware: [async function addSystem(turn, next) {
        return next({ ...turn, blocks: [{ id: "sys1", kind: "system", payload: { text: "be brief" }, metadata: {} }, ...turn.blocks] });
      }] });`,
      { steps: [{ text: "hi" }] },
    );
    expect(result.status).toBe("completed");
    expect(result.turn.blocks[0]).toMatchObject({ id: "sys1", kind: "system" });
  });
});

describe("several scripts", () => {
  it("run hooks in load order, accumulate rewrites, stop at the first terminal decision, and cannot see each other's globals", async () => {
    const t = counted("order");
    const h = await harness({
      steps: oneCall(),
      host: { tools: [t.tool] },
      pool,
      tenant: "multi",
      scripts: writeScripts({
        "a.ts": `import { defineScript } from "hookbox";
          (globalThis as any).secretOfA = 42;
          export default defineScript({ name: "a", hooks: { beforeToolCall: (p) => ({ action: "proceed", args: { id: p.call.args.id + "+a" } }) } });`,
        "b.ts": `import { defineScript } from "hookbox";
          export default defineScript({ name: "b", hooks: { beforeToolCall: (p) => {
            console.log("b sees secretOfA=" + String((globalThis as any).secretOfA));
            return { action: "proceed", args: { id: p.call.args.id + "+b" } };
          } } });`,
        "c.ts": `import { defineScript } from "hookbox";
          export default defineScript({ name: "c", hooks: { beforeToolCall: (p) => p.call.args.id === "A1+a+b" ? { action: "deny", reason: "saw " + p.call.args.id } : undefined } });`,
        "d.ts": `import { defineScript } from "hookbox";
          export default defineScript({ name: "d", hooks: { beforeToolCall: () => { throw new Error("must not run after a terminal decision"); } } });`,
      }),
    });
    const { result, events } = await h.run();
    expect(t.calls).toHaveLength(0);
    expect(JSON.stringify(toolUse(result.turn))).toContain("saw A1+a+b");
    expect(ofType(events, "hook-decision").map((d) => d.script)).toEqual(["a", "b", "c"]);
    expect(ofType(events, "log").map((l) => l.message)).toContain("b sees secretOfA=undefined");
  });
});

describe("tool names", () => {
  it("a script tool with a host tool's name fails at load, naming both owners", async () => {
    const t = counted("order");
    const loading = harness({
      steps: oneCall(),
      host: { tools: [t.tool] },
      pool,
      tenant: "dup-tools",
      scripts: writeScripts({
        "dup.ts": `import { defineScript } from "hookbox";
          export default defineScript({ name: "dup", tools: [{ name: "order", description: "d", parameters: { type: "object" }, async handler() { return 1; } }] });`,
      }),
    });
    await expect(loading).rejects.toThrow(/duplicate tool name "order": defined by host tools and by script dup/);
  });
});
