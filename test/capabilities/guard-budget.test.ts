import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandboxPool, type SupervisedSandboxPool } from "../../src/sandbox/index.js";
import type { CapabilityEvent, HookboxEvent } from "../../src/events/types.js";
import type { RunOptions } from "../../src/host/types.js";
import type { Pricing } from "../../src/host/usage.js";
import { writeSteps } from "../helpers/harness.js";
import { hookRuntime } from "./hook-runtime.js";

/*
 * Sixteen guard-model calls in flight at once, through a real loop and a real sandbox: each used to pass the
 * budget check before any had spent, so the run spent 16 calls against a budget of 5. A call in flight now
 * holds what it may spend (its maxTokens and an upper bound of its prompt's tokens) until it is answered, so
 * the run goes past its budget by at most one call. The guard model answers each call after 300 ms with 4,000
 * output tokens (within the 4,000 the call asks for).
 */

const parallel = `import { defineScript } from "hookbox";
export default defineScript({
  name: "parallel-guard",
  onHookError: "fail-open",
  hooks: {
    async beforeToolCall(p) {
      const codes: Record<string, number> = {};
      let refusal = "";
      const all = await Promise.all(
        Array.from({ length: 16 }, () =>
          p.model.generate({ prompt: "judge", maxTokens: 4000 }).then(
            () => "ok",
            (e) => {
              refusal ||= (e as Error).message;
              return (e as any).code;
            },
          ),
        ),
      );
      for (const code of all) codes[code] = (codes[code] ?? 0) + 1;
      console.log(JSON.stringify({ codes, refusal }));
      return undefined;
    },
  },
});
`;

/** What one call may spend as the broker reckons it: maxTokens, plus one token per byte of the prompt and 8 per message. */
const HELD_PER_CALL = 4000 + "judge".length + 8;
const USED_PER_CALL = 10 + 4000;

let pool: SupervisedSandboxPool;
beforeAll(() => {
  pool = createSandboxPool({ workers: 1 });
});
afterAll(() => pool?.close());

async function sixteenInFlight(tenant: string, options: RunOptions, pricing?: Pricing) {
  const runtime = await hookRuntime({
    pool,
    tenant,
    script: parallel,
    args: {},
    capabilities: {
      guardModel: {
        kind: "scripted",
        file: writeSteps(Array(16).fill({ text: "OK", delayMs: 300, usage: { inputTokens: 10, outputTokens: 4000 } })),
      },
    },
    ...(pricing ? { extras: { pricing } } : {}),
  });
  const handle = runtime.start({ sessionId: `sess_${tenant}`, prompt: "go", options });
  const events: HookboxEvent[] = [];
  for await (const event of handle.events()) events.push(event);
  const result = await handle.wait();
  const { codes, refusal } = JSON.parse((events.find((event) => event.type === "log") as { message: string }).message) as {
    codes: Record<string, number>;
    refusal: string;
  };
  const answered = events.filter((event): event is CapabilityEvent & HookboxEvent => event.type === "capability" && event.ok);
  const finished = events.at(-1) as Extract<HookboxEvent, { type: "run-finished" }>;
  return { codes, refusal, answered, result, usage: finished.usage! };
}

describe("guard-model calls in flight hold their budget", () => {
  it("maxTokens: 16 parallel calls against room for 5 spend at most one call past the budget", async () => {
    const maxTokens = 20_000;
    const { codes, refusal, answered, result, usage } = await sixteenInFlight("tokens", { maxTokens });
    // Admitted while what was spent and held stayed within the budget: 0, 4013, ... 16052; the sixth would hold 20065.
    expect(codes).toEqual({
      ok: Math.floor(maxTokens / HELD_PER_CALL) + 1,
      CAPABILITY_QUOTA: 16 - Math.floor(maxTokens / HELD_PER_CALL) - 1,
    });
    expect(answered).toHaveLength(codes.ok);
    expect(refusal).toBe(
      `ctx.model.generate: the run used 0 tokens, and calls in flight may use ${5 * HELD_PER_CALL} more, past its limit maxTokens (20000)`,
    );
    const spent = usage.inputTokens + usage.outputTokens;
    expect(spent).toBe(codes.ok * USED_PER_CALL);
    expect(spent).toBeLessThanOrEqual(maxTokens + USED_PER_CALL);
    // The run's tokens went past its budget (by less than one call): it ends before its next inference.
    expect(result).toMatchObject({ status: "failed", errorCode: "BUDGET" });
  }, 60_000);

  it("maxCostUsd: the held tokens are priced like spent ones", async () => {
    // $1 per 1,000 output tokens and per 1,000 input tokens: a call holds $4.013 and spends $4.01.
    const pricing: Pricing = { scripted: { inputPerMTok: 1000, outputPerMTok: 1000 } };
    const { codes, refusal, usage } = await sixteenInFlight("cost", { maxCostUsd: 10 }, pricing);
    expect(refusal).toBe("ctx.model.generate: the run cost $0, and calls in flight may cost $12.039 more, past its limit maxCostUsd ($10)");
    expect(codes).toEqual({ ok: 3, CAPABILITY_QUOTA: 13 });
    expect(usage.costUsd).toBeCloseTo(3 * 4.01, 6);
    expect(usage.costUsd).toBeLessThanOrEqual(10 + 4.01);
  }, 60_000);
});
