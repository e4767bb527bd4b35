import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import type { LogEntry } from "../../src/sandbox/api.js";
import { afterPayload, beforePayload, middlewareCtx, rejection, script, toolCtx, turn, writeFiles } from "./helpers.js";

const pool = createSandboxPool({ workers: 2 });
afterAll(() => pool.close());

const policy = script(
  "policy",
  `import { defineScript } from "hookbox";
export default defineScript({
  middleware: [
    async function tagTurn(turn, next) {
      const out = await next(turn);
      out.metadata.tagged = true;
      return out;
    },
    { name: "forgetful", run: async (turn, next) => { await next(turn); } },
  ],
  tools: [{ name: "lookup_order", description: "Look up an order", parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    handler: async (args, ctx) => ({ id: args.id, total: 120, attempt: ctx.attempt }) }],
  hooks: {
    beforeToolCall(p) {
      console.log("checking", p.call.name);
      if (p.call.name === "refund" && p.call.args.amount > 100) return { action: "deny", reason: "over limit" };
      if (p.call.name === "broken") return { action: "deny" };
      if (p.call.name === "weird") return { action: "explode" };
    },
    afterToolCall(p) { return { result: { wrapped: p.result } }; },
  },
});`,
);

describe("loading", () => {
  it("bundles, evaluates and describes a script", async () => {
    const [manifest] = await pool.tenant("load-a").load([policy]);
    expect(manifest).toMatchObject({
      name: "policy",
      onHookError: "fail-closed",
      middleware: ["tagTurn", "forgetful"],
      hooks: ["beforeToolCall", "afterToolCall"],
      tools: [{ name: "lookup_order", description: "Look up an order" }],
    });
    expect(manifest.bundleHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("bundles relative imports and maps errors to the author's TypeScript", async () => {
    const dir = writeFiles({
      "main.ts": `import { defineScript } from "hookbox";\nimport { fail } from "./lib/fail";\nexport default defineScript({ hooks: { beforeToolCall() { fail(); } } });\n`,
      "lib/fail.ts": `type T = { a: number };\n\nexport function fail(): never {\n  throw new Error("no refunds today");\n}\n`,
    });
    const tenant = pool.tenant("load-b");
    const manifests = await tenant.load([{ path: `${dir}/main.ts` }]);
    const run = await tenant.openRun({ runId: "r1", scripts: manifests });
    const error = await rejection(run.callHook("main", "beforeToolCall", beforePayload()));
    expect(error.code).toBe("SCRIPT_ERROR");
    expect(error.message).toContain("no refunds today");
    expect(error.details.location).toBe("lib/fail.ts:4:9");
    expect(String(error.details.stack)).toContain("main.ts:3:");
    await run.close();
  });

  it("refuses Node built-ins naming the import and the file", async () => {
    const dir = writeFiles({
      "main.ts": `import { defineScript } from "hookbox";\nimport { helper } from "./helper";\nexport default defineScript({ hooks: { beforeToolCall() { helper(); } } });\n`,
      "helper.ts": `import { readFileSync } from "node:fs";\nexport const helper = () => readFileSync("/etc/passwd");\n`,
    });
    const error = await rejection(pool.tenant("load-c").load([{ path: `${dir}/main.ts` }]));
    expect(error.code).toBe("SCRIPT_LOAD");
    expect(error.message).toContain('"node:fs"');
    expect(error.message).toContain("helper.ts");
  });

  it.each([
    ["no default export", `export const x = 1;`, "no default export"],
    ["unknown field", `export default { hook: {} };`, 'unknown field "hook"'],
    ["hook not a function", `export default { hooks: { beforeToolCall: 3 } };`, "hooks.beforeToolCall must be a function"],
    [
      "duplicate tools",
      `const t = { name: "a", description: "", handler() {} }; export default { tools: [t, t] };`,
      'tool name "a" is used twice',
    ],
    [
      "bad schema",
      `export default { tools: [{ name: "a", description: "", parameters: { type: "object", properties: { x: { type: 12 } } }, handler() {} }] };`,
      "not a valid JSON Schema",
    ],
    ["anonymous middleware", `export default { middleware: [async (t, n) => n(t)] };`, "has no name"],
    ["bad onHookError", `export default { onHookError: "ignore" };`, "onHookError must be one of"],
    ["throwing top level", `throw new Error("top-level boom");`, "top-level boom"],
    ["syntax error", `export default {`, "bad.ts:1:17: esbuild cannot bundle this"],
    // A script's name goes into every event and span of its calls: bounded, and plain, like a tool's.
    ["a name of 2 MB", `export default { name: "n".repeat(2 * 1024 * 1024) };`, "(2097152 characters): a script name may use letters"],
    ["a name of 65 characters", `export default { name: "${"a".repeat(65)}" };`, "(65 characters): a script name may use letters"],
    ["a name with a line break", `export default { name: "guard\\nINFO forged log line" };`, '"guard\\nINFO forged log line"'],
    ["a name with a space", `export default { name: "refund policy" };`, "a script name may use letters, digits, _, . and -"],
  ])("rejects a bad script: %s", async (_label, source, expected) => {
    const error = await rejection(pool.tenant("load-bad").load([script("bad", source)]));
    expect(error.code).toBe("SCRIPT_LOAD");
    expect(error.message).toContain(expected);
  });

  it("checks the name a script takes from its file too, and accepts plain names up to 64 characters", async () => {
    const error = await rejection(pool.tenant("load-e").load([script("refund policy", `export default {};`)]));
    expect(error.code).toBe("SCRIPT_LOAD");
    expect(error.message).toContain('name "refund policy" (from its file name; give defineScript a name)');
    const [manifest] = await pool.tenant("load-f").load([script("policy.v2", `export default { name: "${"a".repeat(60)}_.-9" };`)]);
    expect(manifest.name).toBe(`${"a".repeat(60)}_.-9`);
  });

  it("refuses two scripts with the same name", async () => {
    const one = script("dup", `export default { name: "same" };`);
    const two = script("dup2", `export default { name: "same" };`);
    const error = await rejection(pool.tenant("load-d").load([one, two]));
    expect(error.code).toBe("SCRIPT_LOAD");
    expect(error.message).toContain('two scripts are named "same"');
  });
});

describe("callbacks", () => {
  async function openPolicy(tenantName: string, onLog?: (entry: LogEntry) => void) {
    const tenant = pool.tenant(tenantName);
    const manifests = await tenant.load([policy]);
    return tenant.openRun({ runId: `run-${tenantName}`, scripts: manifests, onLog });
  }

  it("runs hooks and validates their returns", async () => {
    const logs: LogEntry[] = [];
    const run = await openPolicy("calls-a", (entry) => logs.push(entry));
    expect(await run.callHook("policy", "beforeToolCall", beforePayload("refund", { amount: 500 }))).toEqual({
      action: "deny",
      reason: "over limit",
    });
    expect(await run.callHook("policy", "beforeToolCall", beforePayload("lookup"))).toBeUndefined();
    expect(await run.callHook("policy", "afterToolCall", afterPayload({ ok: 1 }))).toEqual({ result: { wrapped: { ok: 1 } } });
    expect(logs).toContainEqual({ script: "policy", tenant: "calls-a", level: "info", message: "checking refund" });
    await run.close();
  });

  it("admits only what the run opened with: a closed run, a script or hook it lacks, a script replaced since", async () => {
    const tenant = pool.tenant("calls-admission");
    const [first] = await tenant.load([
      script("policy", `export default { hooks: { beforeToolCall() { return { action: "deny", reason: "v1" }; } } };`),
    ]);
    const run = await tenant.openRun({ runId: "run-admission", scripts: [first!] });
    expect(await run.callHook("policy", "beforeToolCall", beforePayload())).toEqual({ action: "deny", reason: "v1" });

    const missing = await rejection(run.callHook("other", "beforeToolCall", beforePayload()));
    expect([missing.code, missing.message]).toEqual(["SCRIPT_ERROR", 'script "other" is not part of run run-admission']);
    const noHook = await rejection(run.callHook("policy", "afterToolCall", afterPayload({})));
    expect([noHook.code, noHook.message]).toEqual(["SCRIPT_ERROR", 'script "policy" has no hook named "afterToolCall"']);

    // A new version under the same name replaces the loaded one: the open run must not run code it did not open with.
    await tenant.load([script("policy", `export default { hooks: { beforeToolCall() { return { action: "deny", reason: "v2" }; } } };`)]);
    const replaced = await rejection(run.callHook("policy", "beforeToolCall", beforePayload()));
    expect(replaced.code).toBe("SCRIPT_ERROR");
    expect(replaced.message).toBe('script "policy" of run run-admission is no longer loaded in tenant calls-admission');

    await run.close();
    const closed = await rejection(run.callHook("policy", "beforeToolCall", beforePayload()));
    expect([closed.code, closed.message]).toEqual(["CANCELLED", "run run-admission is closed"]);
  });

  it("a worker stops polling its pipe once calls stop: idle, it uses (almost) no CPU", async () => {
    const run = await openPolicy("calls-idle");
    for (let i = 0; i < 300; i++) await run.callHook("policy", "beforeToolCall", beforePayload("lookup"));
    const pid = pool.workers().find((worker) => worker.tenants.includes("calls-idle"))!.pid!;
    // utime + stime in clock ticks (1/100 s); a worker that kept polling would burn ~100 per second.
    const cpuTicks = () => {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      return Number(fields[11]) + Number(fields[12]);
    };
    const before = cpuTicks();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(cpuTicks() - before).toBeLessThan(30);
    await run.close();
  });

  it("the host stays awake only while a reply is due: idle afterwards, it sleeps", async () => {
    const run = await openPolicy("calls-host-idle");
    for (let i = 0; i < 300; i++) await run.callHook("policy", "beforeToolCall", beforePayload("lookup"));
    // An event loop that kept turning after the last reply would burn ~1000 ms of CPU in this second.
    const before = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const used = process.cpuUsage(before);
    expect((used.user + used.system) / 1000).toBeLessThan(300);
    await run.close();
  });

  it("names the script, the hook and the JSON path of a contract violation", async () => {
    const run = await openPolicy("calls-b");
    const missing = await rejection(run.callHook("policy", "beforeToolCall", beforePayload("broken")));
    expect(missing.code).toBe("HOOK_CONTRACT");
    expect(missing.details).toMatchObject({ script: "policy", hook: "beforeToolCall", path: "$.reason" });
    const unknown = await rejection(run.callHook("policy", "beforeToolCall", beforePayload("weird")));
    expect(unknown.code).toBe("HOOK_CONTRACT");
    expect(unknown.details.path).toBe("$.action");
    expect(unknown.message).toContain('"explode"');
    await run.close();
  });

  it("runs tools and middleware with next()", async () => {
    const run = await openPolicy("calls-c");
    expect(await run.callTool("policy", "lookup_order", { id: "A17" }, toolCtx)).toEqual({ id: "A17", total: 120, attempt: 1 });
    let seen: unknown;
    const out = await run.callMiddleware("policy", "tagTurn", turn("hi"), middlewareCtx, async (passed) => {
      seen = passed;
      return { ...passed, blocks: [...passed.blocks, { id: "b2", kind: "llm_text", payload: { text: "answer" }, metadata: {} }] };
    });
    expect(seen).toEqual(turn("hi"));
    expect(out.metadata).toEqual({ tagged: true });
    expect(out.blocks.map((block) => block.id)).toEqual(["b1", "b2"]);
    await run.close();
  });

  it("reports a middleware that returns nothing", async () => {
    const run = await openPolicy("calls-d");
    const error = await rejection(run.callMiddleware("policy", "forgetful", turn(), middlewareCtx, async (t) => t));
    expect(error.code).toBe("HOOK_CONTRACT");
    expect(error.message).toContain("forgetful returned nothing");
    await run.close();
  });

  it("gives each run fresh globals", async () => {
    const tenant = pool.tenant("calls-e");
    const manifests = await tenant.load([
      script(
        "counter",
        `let n = 0; export default { tools: [{ name: "count", description: "", handler() { globalThis.total = (globalThis.total ?? 0) + 1; return { n: ++n, total: globalThis.total }; } }] };`,
      ),
    ]);
    const first = await tenant.openRun({ runId: "r1", scripts: manifests });
    expect(await first.callTool("counter", "count", {}, toolCtx)).toEqual({ n: 1, total: 1 });
    expect(await first.callTool("counter", "count", {}, toolCtx)).toEqual({ n: 2, total: 2 });
    const second = await tenant.openRun({ runId: "r2", scripts: manifests });
    expect(await second.callTool("counter", "count", {}, toolCtx)).toEqual({ n: 1, total: 1 });
    await first.close();
    await second.close();
  });

  it("reads a script's tool schemas at load only: a run's context registers its callables, not its manifest", async () => {
    // The schema's getter runs when the manifest is serialized: in the load's context (which the host keeps the
    // manifest of), never in a run's, where the tool reports whether it ran there.
    const tenant = pool.tenant("calls-schema-once");
    const manifests = await tenant.load([
      script(
        "schemas",
        `export default { tools: [{ name: "probe", description: "", get parameters() { globalThis.schemaRead = true; return { type: "object", properties: { q: { type: "string" } } }; }, handler() { return { schemaRead: globalThis.schemaRead === true }; } }] };`,
      ),
    ]);
    expect(manifests[0]!.tools[0]!.parameters).toEqual({ type: "object", properties: { q: { type: "string" } } });
    const run = await tenant.openRun({ runId: "r-schema", scripts: manifests });
    expect(await run.callTool("schemas", "probe", {}, toolCtx)).toEqual({ schemaRead: false });
    await run.close();
  });
});
