import { describe, expect, it } from "vitest";
import { createSandboxPool } from "../../src/sandbox/index.js";
import { afterPayload, beforePayload, middlewareCtx, script, toolCtx, turn } from "./helpers.js";
import { assertWorkerIntact, attackLimits, attacker, redTeamPool, timedRejection, victim } from "./redteam-helpers.js";

/*
 * Red team: resource attacks. Limits: 100 ms CPU, 1 s wall, 32 MB per callback/tenant; the supervisor's
 * grace is 500 ms. Each case asserts the code and which bound ended the attack (the isolate's own limit, named in
 * the error, or the supervisor's kill), that the attack ended (within CONTAINED_MS), a victim served meanwhile,
 * and a working next call. The wall-clock bounds are generous on purpose: an attack that is not contained runs on
 * past them (or for good), so they still fail it, and a loaded machine cannot make a false red. How fast the
 * host contains an attack and serves others is measured by `npm run bench` (docs/bench.md).
 */
const CONTAINED_MS = 15_000;
const { pool, good } = redTeamPool({ workers: 2, killGraceMs: 500, maxPayloadBytes: 1_000_000 });

/** A hook that attacks when the call is named "attack" and behaves otherwise (to prove recovery). */
const hook = (attack: string) =>
  `{ hooks: { beforeToolCall(p) { if (p.call.name === "attack") { ${attack} } return { action: "deny", reason: "fine" }; } } }`;

/**
 * The attack ends with `code`; a SANDBOX_TIMEOUT names the isolate's own limit that fired (`limit`: "cpu" or
 * "wall", not the supervisor's kill, which names the worker); `messagePart` says more where a case needs it.
 */
async function expectContained(body: string, code: string, messagePart?: string, limits = attackLimits) {
  const { run, tenant } = await attacker(pool, body, limits);
  const attack = run.callHook("attack", "beforeToolCall", beforePayload("attack"));
  const victimDuring = good.served();
  const error = await timedRejection(attack);
  expect(error.code).toBe(code);
  expect(error.ms).toBeLessThan(CONTAINED_MS);
  if (code === "SANDBOX_TIMEOUT") {
    expect(["cpu", "wall"], error.message).toContain(error.details.limit);
    expect(error.details.limitMs).toBe(error.details.limit === "cpu" ? limits.cpuMs : limits.wallMs);
  }
  if (messagePart) expect(error.message).toContain(messagePart);
  await victimDuring;
  await good.served(); // and after
  // The same tenant's next callback works. It re-creates the script's context, whose top-level evaluation (timed
  // by the wall clock) a heavily loaded machine stretched past 200 ms: the check is that the tenant survives.
  pool.tenant(tenant, { cpuMs: 1000, wallMs: 5000 });
  expect(await run.callHook("attack", "beforeToolCall", beforePayload("calm"))).toEqual({ action: "deny", reason: "fine" });
  await assertWorkerIntact(pool, tenant);
  return error;
}

describe("red team: CPU and time", () => {
  it("a synchronous infinite loop", async () => {
    await expectContained(hook(`while (true) {}`), "SANDBOX_TIMEOUT", "CPU time limit of 100 ms");
  });

  it("an infinite loop after awaiting the host (next())", async () => {
    const { run } = await attacker(
      pool,
      `{ middleware: [async function spin(turn, next) { const out = await next(turn); while (true) {} }] }`,
    );
    let nextRan = false;
    const error = await timedRejection(
      run.callMiddleware("attack", "spin", turn(), middlewareCtx, async (t) => {
        await new Promise((resolve) => setTimeout(resolve, 300)); // host time is not charged
        nextRan = true;
        return t;
      }),
    );
    expect(nextRan).toBe(true);
    expect(error.code).toBe("SANDBOX_TIMEOUT");
    expect(error.details.limit).toBe("cpu");
    expect(error.ms).toBeLessThan(CONTAINED_MS);
    await good.served();
  });

  it("an async loop of awaits (microtask flood)", async () => {
    await expectContained(hook(`return (async () => { for (;;) await null; })();`), "SANDBOX_TIMEOUT");
  });

  it("a self-feeding promise chain", async () => {
    await expectContained(hook(`const f = () => Promise.resolve().then(f); f(); return new Promise(() => {});`), "SANDBOX_TIMEOUT");
  });

  it("a promise that never settles fails at once", async () => {
    await expectContained(hook(`return new Promise(() => {});`), "SCRIPT_ERROR", "never settles");
  });

  it("a catastrophic regex", async () => {
    await expectContained(hook(`/^(a+)+$/.test("a".repeat(40) + "b");`), "SANDBOX_TIMEOUT");
  });

  it("a long built-in that overshoots the in-isolate timeout is killed by the supervisor", async () => {
    const { run, tenant } = await attacker(pool, hook(`const s = "a".repeat(2e7); for (let i = 0; i < 20; i++) s.replace(/a/g, "bb");`), {
      cpuMs: 50,
      wallMs: 1000,
      memoryMb: 256,
    });
    const error = await timedRejection(run.callHook("attack", "beforeToolCall", beforePayload("attack")));
    expect(error.code).toBe("SANDBOX_TIMEOUT");
    // The supervisor's kill, which names the worker it killed (the isolate's own limit did not stop the built-in).
    expect(error.message).toContain("the sandbox worker was killed");
    expect(error.ms).toBeLessThan(CONTAINED_MS);
    await good.served();
    pool.tenant(tenant, { cpuMs: 1000, wallMs: 5000 }); // as in expectContained: survival, not speed under load
    expect(await run.callHook("attack", "beforeToolCall", beforePayload("calm"))).toEqual({ action: "deny", reason: "fine" });
    // A tenant that broke a limit is moved to the quarantine worker.
    expect(pool.workers().find((worker) => worker.tenants.includes(tenant))?.role).toBe("quarantine");
  });

  it("a getter that loops while the result is serialized", async () => {
    await expectContained(hook(`return { action: "skip", get result() { while (true) {} } };`), "SANDBOX_TIMEOUT");
  });

  it("a thrown value whose getter loops", async () => {
    await expectContained(hook(`throw { get message() { while (true) {} }, get stack() { while (true) {} } };`), "SANDBOX_TIMEOUT");
  });

  it("a proxy whose ownKeys trap loops", async () => {
    await expectContained(hook(`return new Proxy({}, { ownKeys() { while (true) {} } });`), "SANDBOX_TIMEOUT");
  });

  it("a custom thenable that loops when adopted", async () => {
    await expectContained(hook(`return { then(resolve) { while (true) {} } };`), "SANDBOX_TIMEOUT");
  });
});

describe("red team: memory and stack", () => {
  it("a memory bomb (growing arrays)", async () => {
    // CPU headroom so that the memory limit, the thing under test, is what ends it even on a loaded machine
    // (with 100 ms of CPU, slow GC near the limit sometimes ended it as SANDBOX_TIMEOUT first).
    await expectContained(
      hook(`const keep = []; for (;;) keep.push(new Array(1e6).fill(1.5));`),
      "SANDBOX_MEMORY",
      "memory limit of 32 MB",
      { ...attackLimits, cpuMs: 1000 },
    );
  });

  it("a memory bomb of small objects (GC thrash near the limit) is ended by the limit or by the supervisor", async () => {
    const { run } = await attacker(pool, hook(`const m = new Map(); for (let i = 0; ; i++) m.set(i, { i, s: "v" + i });`), {
      ...attackLimits,
      cpuMs: 1000,
      wallMs: 1000,
    });
    const attack = run.callHook("attack", "beforeToolCall", beforePayload("attack"));
    // Sharing the attacker's worker costs a victim time, never its call: unstarted calls move to a new worker.
    const victimDuring = good.served();
    const error = await timedRejection(attack);
    expect(["SANDBOX_MEMORY", "SANDBOX_TIMEOUT"]).toContain(error.code);
    expect(error.ms).toBeLessThan(CONTAINED_MS);
    await victimDuring;
    await good.served();
    expect(await run.callHook("attack", "beforeToolCall", beforePayload("calm"))).toEqual({ action: "deny", reason: "fine" });
  });

  it("a string-doubling bomb stops at V8's string length limit", async () => {
    await expectContained(
      hook(`let s = "x"; for (;;) s = s + s; return { action: "deny", reason: s };`),
      "SCRIPT_ERROR",
      "Invalid string length",
    );
  });

  it("deep recursion", async () => {
    await expectContained(hook(`const f = (n) => f(n + 1) + 1; f(0);`), "SCRIPT_ERROR", "Maximum call stack");
  });
});

describe("red team: returned data", () => {
  it("a turn from next() over the size cap reaches the middleware as PAYLOAD_TOO_LARGE, naming the limit", async () => {
    const { run } = await attacker(
      pool,
      `{ middleware: [async function relay(turn, next) { try { return await next(turn); } catch (error) { return { ...turn, blocks: [], metadata: { code: error.code, message: error.message } }; } }] }`,
    );
    const out = await run.callMiddleware("attack", "relay", turn(), middlewareCtx, async (t) => ({
      ...t,
      blocks: [...t.blocks, { id: "big", kind: "llm_text", payload: { text: "x".repeat(2_000_000) }, metadata: {} }],
    }));
    expect(out.metadata).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(String(out.metadata.message)).toMatch(/the turn from next\(\) is \d+ bytes, over the sandbox's maxPayloadBytes of 1000000/);
  });

  it("a result over the size cap is PAYLOAD_TOO_LARGE, naming the path and the limit", async () => {
    const error = await expectContained(hook(`return { action: "skip", result: "x".repeat(5e6) };`), "PAYLOAD_TOO_LARGE");
    expect(String(error.details.path)).toContain("$.result");
    expect(error.message).toMatch(/maxPayloadBytes: \$\.result .*1000000-byte limit/);
  });

  it.each([
    ["a cyclic object", `const o = { a: {} }; o.a.back = o; return { action: "skip", result: o };`, "$.result.a.back", "cyclic"],
    ["a function", `return { action: "skip", result: { fn() {} } };`, "$.result.fn", "function"],
    ["NaN", `return { action: "skip", result: [1, NaN] };`, "$.result[1]", "NaN"],
    ["a BigInt", `return { action: "skip", result: { n: 10n } };`, "$.result.n", "bigint"],
    ["a symbol", `return { action: "skip", result: Symbol("s") };`, "$.result", "symbol"],
    [
      "very deep nesting",
      `let o = {}; const root = o; for (let i = 0; i < 500; i++) { o.n = {}; o = o.n; } return { action: "skip", result: root };`,
      "$.result",
      "deeper",
    ],
  ])("%s is a HOOK_CONTRACT error naming the path", async (_label, attack, path, problem) => {
    const error = await expectContained(hook(attack), "HOOK_CONTRACT");
    expect(String(error.details.path)).toContain(path);
    expect(error.message).toContain(problem);
  });

  it("getters and proxies in returned data are read once, inside the sandbox, as plain data", async () => {
    const { run } = await attacker(
      pool,
      `{ hooks: { afterToolCall(p) {
        let reads = 0;
        const result = new Proxy({ a: 1 }, { get(target, key) { reads++; return key === "a" ? "via proxy" : target[key]; } });
        return { get result() { return { proxied: result, reads, date: new Date(0) }; } };
      } } }`,
    );
    expect(await run.callHook("attack", "afterToolCall", afterPayload(1))).toEqual({
      result: { proxied: { a: "via proxy" }, reads: 0, date: "1970-01-01T00:00:00.000Z" },
    });
  });

  it("a payload over the size cap is refused before it enters the sandbox, with its own code naming the limit", async () => {
    const { run } = await attacker(pool, `{ tools: [{ name: "t", description: "", handler: (args) => args }] }`);
    const error = await timedRejection(run.callTool("attack", "t", { big: "x".repeat(2_000_000) }, toolCtx));
    expect(error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(error.message).toMatch(/the payload is \d+ bytes, over the sandbox's maxPayloadBytes of 1000000/);
  });
});

describe("red team: floods", () => {
  it("a tenant flooding its queue is refused beyond the queue depth; others are served", async () => {
    const flood = createSandboxPool({ workers: 2, maxQueueDepth: 8 });
    try {
      const floodVictim = await victim(flood);
      const sandbox = flood.tenant("flooder", { cpuMs: 100, wallMs: 1000 });
      const manifests = await sandbox.load([
        script("flooder", `export default { hooks: { beforeToolCall() { const end = Date.now() + 5; while (Date.now() < end) {} } } };`),
      ]);
      const run = await sandbox.openRun({ runId: "flood", scripts: manifests });
      const calls = Array.from({ length: 40 }, () =>
        run.callHook("flooder", "beforeToolCall", beforePayload()).then(
          () => "ok",
          (error: { code: string }) => error.code,
        ),
      );
      await floodVictim.served();
      const outcomes = await Promise.all(calls);
      expect(outcomes.filter((outcome) => outcome === "SANDBOX_OVERLOADED").length).toBeGreaterThan(0);
      expect(outcomes.filter((outcome) => outcome === "ok").length).toBeGreaterThanOrEqual(8);
    } finally {
      await flood.close();
    }
  });

  it("a log flood is rate- and size-limited, and the dropped lines are reported", async () => {
    // The limits under test are the log's (rate and size); a CPU budget of its own keeps 5,000 lines of 10 kB
    // within time on a loaded machine, where the default 200 ms has run out before the last line.
    const sandbox = pool.tenant("logger", { cpuMs: 2000, wallMs: 10_000 });
    const manifests = await sandbox.load([
      script(
        "logger",
        `export default { hooks: {
          beforeToolCall() { for (let i = 0; i < 5000; i++) console.log("line " + i + " " + "y".repeat(10000)); },
          afterToolCall() { console.log("after"); },
        } };`,
      ),
    ]);
    const logs: { level: string; message: string }[] = [];
    const run = await sandbox.openRun({ runId: "logs", scripts: manifests, onLog: (entry) => logs.push(entry) });
    const started = performance.now();
    await run.callHook("logger", "beforeToolCall", beforePayload());
    const seconds = (performance.now() - started) / 1000;
    const passed = logs.filter((entry) => entry.message.startsWith("line ")).length;
    expect(passed).toBeGreaterThan(0);
    // A burst of 100, refilled at 100 per second.
    expect(passed).toBeLessThanOrEqual(100 + Math.ceil(seconds * 100) + 1);
    for (const entry of logs) expect(entry.message.length).toBeLessThanOrEqual(4096);

    // The next line that passes carries the count of what was dropped: every line is accounted for.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await run.callHook("logger", "afterToolCall", afterPayload({ ok: true }));
    expect(logs.at(-1)).toMatchObject({ level: "info", message: "after" });
    const notices = logs
      .filter((entry) => entry.level === "warn")
      .map((entry) => /^(\d+) log lines dropped: over the limit of 100 per second or of 393216 bytes in one reply$/.exec(entry.message));
    expect(notices.length).toBeGreaterThan(0);
    expect(passed + notices.reduce((sum, match) => sum + Number(match![1]), 0)).toBe(5000);
  });
});
