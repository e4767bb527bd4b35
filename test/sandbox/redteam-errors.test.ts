import { describe, expect, it } from "vitest";
import { beforePayload, rejection, script } from "./helpers.js";
import { attacker, redTeamPool } from "./redteam-helpers.js";

/*
 * Red team: what a script throws. Its fields are read inside the isolate, under the call's time limit, and
 * every text that leaves as an error is clipped; nothing thrown leaves the runtime for isolated-vm to read
 * outside the timeout. One shared worker: an attack that killed it would take the neighbour's isolate with it.
 */
const { pool, good } = redTeamPool({ workers: 1 });

/** A tenant in the same worker whose script counts its calls in a module variable (its context's state). */
async function neighbour() {
  const sandbox = pool.tenant("neighbour");
  const manifests = await sandbox.load([
    script(
      "counter",
      `let count = 0; export default { hooks: { beforeToolCall() { count++; return { action: "deny", reason: String(count) }; } } };`,
    ),
  ]);
  const run = await sandbox.openRun({ runId: `neighbour-${Date.now()}`, scripts: manifests });
  return () => run.callHook("counter", "beforeToolCall", beforePayload());
}

/** A message and details as small as the clip makes them: 4096 characters of message, 16384 of stack. */
function expectClipped(error: { message: string; details: Record<string, unknown> }): void {
  expect(error.message.length).toBeLessThan(4096 + 400);
  expect(JSON.stringify(error.details).length).toBeLessThan(16384 + 4096 + 1000);
}

const HUGE = `"x".repeat(30_000_000)`;

describe("red team: thrown values", () => {
  it.each([
    ["a proxy whose prototype trap throws a huge error", `throw new Proxy({}, { getPrototypeOf() { throw new Error(${HUGE}); } });`],
    [
      "a proxy whose prototype trap throws an error whose message getter loops",
      `const e = new Error("e"); Object.defineProperty(e, "message", { get() { for (;;) {} } });
       Object.defineProperty(e, "stack", { get() { for (;;) {} } });
       throw new Proxy({}, { getPrototypeOf() { throw e; } });`,
    ],
    ["the same after an await", `await null; throw new Proxy({}, { getPrototypeOf() { throw new Error(${HUGE}); } });`],
    ["a huge message after an await (a rejection)", `await null; throw new Error(${HUGE});`],
    ["a huge message in the stack", `const e = new Error("short"); e.stack = ${HUGE}; throw e;`],
    ["a huge non-error value", `throw ${HUGE};`],
    ["a proxy whose traps all throw", `throw new Proxy({}, new Proxy({}, { get() { return () => { throw new Error(${HUGE}); }; } }));`],
  ])("%s: only that call fails, with a clipped SCRIPT_ERROR; the worker and its other tenants live on", async (_label, attack) => {
    const count = await neighbour();
    expect(await count()).toEqual({ action: "deny", reason: "1" });
    const workerBefore = pool.workers()[0]!.pid;
    // Thrown synchronously, or as the rejection of an async hook when the attack awaits.
    const hook = `${attack.includes("await") ? "async " : ""}beforeToolCall() { ${attack} }`;
    const { run } = await attacker(pool, `{ hooks: { ${hook} } }`, { cpuMs: 1000, wallMs: 2000, memoryMb: 256 });
    const error = await rejection(run.callHook("attack", "beforeToolCall", beforePayload()));
    expect(error.code).toBe("SCRIPT_ERROR");
    expectClipped(error);
    // The worker was not killed: the neighbour's isolate kept its state.
    expect(pool.workers().map((worker) => worker.pid)).toContain(workerBefore);
    expect(await count()).toEqual({ action: "deny", reason: "2" });
    await good.served();
  });

  it("a thrown value whose getter loops fails that call by its own time limit, not by the supervisor's kill", async () => {
    const count = await neighbour();
    expect(await count()).toEqual({ action: "deny", reason: "1" });
    const { run } = await attacker(pool, `{ hooks: { beforeToolCall() { throw new Proxy({}, { get() { for (;;) {} } }); } } }`);
    const error = await rejection(run.callHook("attack", "beforeToolCall", beforePayload()));
    expect(error.code).toBe("SANDBOX_TIMEOUT");
    expect(error.message).toContain("CPU time limit of 100 ms");
    expect(await count()).toEqual({ action: "deny", reason: "2" });
  });

  it("an error whose text JSON escapes six-fold (control characters) still reaches the host, clipped, not as 'failed'", async () => {
    const { run } = await attacker(pool, `{ hooks: { beforeToolCall() { throw new Error("\\u0001".repeat(20_000)); } } }`);
    const error = await rejection(run.callHook("attack", "beforeToolCall", beforePayload()));
    expect(error.code).toBe("SCRIPT_ERROR");
    // Clipped (by the worker at 4096 characters, by the host with its clip marker), not lost.
    expect(error.message).toMatch(/^attack: beforeToolCall threw Error: \u0001{4000}/);
    expect((error.details.stack as string).length).toBe(16384);
    expect(error.message.length).toBeLessThan(4096 + 400);
  });

  it("top-level code throwing such a value fails the load with a clipped SCRIPT_LOAD; the worker lives on", async () => {
    const count = await neighbour();
    expect(await count()).toEqual({ action: "deny", reason: "1" });
    const sandbox = pool.tenant("thrower", { cpuMs: 1000, wallMs: 2000, memoryMb: 256 });
    const error = await rejection(
      sandbox.load([
        script("top", `throw new Proxy({}, { getPrototypeOf() { throw new Error(${HUGE}); } });\nexport default { hooks: {} };`),
      ]),
    );
    expect(error.code).toBe("SCRIPT_LOAD");
    expectClipped(error);
    expect(await count()).toEqual({ action: "deny", reason: "2" });
  });
});
