import { describe, expect, it } from "vitest";
import { checkToolResultSize, RunBudgetMeter } from "../../src/loop/run-budget.js";
import type { HookboxEvent } from "../../src/events/types.js";
import type { Block, Turn } from "../../src/turns/turn.js";
import type { HookboxError } from "../../src/errors.js";
import type { RunBudgets } from "../../src/host/types.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import { harness } from "../helpers/harness.js";

/*
 * A run's byte and call budgets at their edges, on the meter the loop counts with: what exactly fits is kept,
 * one byte (or call) more is RUN_BUDGET naming the budget and the amount. The loop's own tests and the server's
 * (test/server/redteam-budgets.test.ts) show the same budgets ending a real run.
 */

const roomy: RunBudgets = { maxRunBytes: 1_000_000, maxToolResultBytes: 1_000_000, maxTurnBytes: 1_000_000, maxToolCallsPerInference: 64 };

/** An event whose JSON text is exactly `bytes` long. */
function eventOf(bytes: number, type = "log"): HookboxEvent {
  const bare = JSON.stringify({ type, text: "" }).length;
  return { type, text: "x".repeat(bytes - bare) } as unknown as HookboxEvent;
}

function block(id: string, text: string): Block {
  return { id, kind: "user", role: "user", payload: { text }, metadata: {} };
}

function turnOf(blocks: Block[]): Turn {
  return { id: "turn", blocks, metadata: { note: "m" }, data: {} };
}

/** The meter's verdict: the error `check()` throws, or "none" when it throws nothing. */
function overrun(meter: RunBudgetMeter): HookboxError | "none" {
  try {
    meter.check();
    return "none";
  } catch (error) {
    return error as HookboxError;
  }
}

describe("maxRunBytes: each event is admitted or refused as it is emitted", () => {
  it("events that reach the budget exactly are kept; the one byte over is refused, and so is every later event but run-finished", () => {
    const meter = new RunBudgetMeter({ ...roomy, maxRunBytes: 300 }, turnOf([]));
    const told: HookboxError[] = [];
    meter.onOverrun = (error) => told.push(error);
    expect(meter.admit(eventOf(100))).toBe(true);
    expect(meter.admit(eventOf(200))).toBe(true);
    expect(overrun(meter)).toBe("none");
    expect(told).toEqual([]);
    // 300 bytes admitted: one more byte does not fit.
    expect(meter.admit(eventOf(30))).toBe(false);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ code: "RUN_BUDGET", details: { budget: "maxRunBytes", bytes: 330 } });
    expect(told[0]!.message).toBe("the run's events reached 330 bytes, over the run budget of 300");
    expect(overrun(meter)).toBe(told[0]);
    // Refused from now on, told only once; the run's last event always goes through.
    expect(meter.admit(eventOf(30))).toBe(false);
    expect(told).toHaveLength(1);
    expect(meter.admit(eventOf(5000, "run-finished"))).toBe(true);
  });

  it("an event that ends exactly at the budget is admitted after others", () => {
    const meter = new RunBudgetMeter({ ...roomy, maxRunBytes: 250 }, turnOf([]));
    expect(meter.admit(eventOf(150))).toBe(true);
    expect(meter.admit(eventOf(100))).toBe(true);
    expect(meter.admit(eventOf(30))).toBe(false);
  });

  it("run-finished counts toward the bytes: what follows it is measured from there", () => {
    const meter = new RunBudgetMeter({ ...roomy, maxRunBytes: 200 }, turnOf([]));
    expect(meter.admit(eventOf(150, "run-finished"))).toBe(true);
    expect(meter.admit(eventOf(60))).toBe(false);
  });

  it("the first overrun is the one kept and told: a turn already over its budget wins over the events'", () => {
    const meter = new RunBudgetMeter({ ...roomy, maxRunBytes: 100, maxTurnBytes: 200 }, turnOf([]));
    const told: HookboxError[] = [];
    meter.onOverrun = (error) => told.push(error);
    const big = turnOf([block("a", "y".repeat(500))]);
    meter.measureTurn(big);
    const first = overrun(meter);
    expect(first).toMatchObject({ code: "RUN_BUDGET", details: { budget: "maxTurnBytes", bytes: JSON.stringify(big).length } });
    expect(meter.admit(eventOf(150))).toBe(false);
    expect(told).toEqual([first]);
    expect(overrun(meter)).toBe(first);
  });
});

/** What a run added to its turn, as the budget counts it: the turn's JSON text without the blocks it started from. */
function addedBytes(turn: Turn, history: Block[]): number {
  const shell = JSON.stringify({ ...turn, blocks: [] }).length;
  return turn.blocks.filter((each) => !history.includes(each)).reduce((sum, each) => sum + JSON.stringify(each).length, shell);
}

describe("maxTurnBytes: what the run adds to its turn", () => {
  it("the blocks a run starts from never count, however long: a session never stops for its history", () => {
    const history = [block("old", "z".repeat(5000))];
    const start = turnOf(history);
    const shell = JSON.stringify({ ...start, blocks: [] }).length;
    const meter = new RunBudgetMeter({ ...roomy, maxTurnBytes: shell }, start);
    expect(overrun(meter)).toBe("none");
    meter.measureTurn(turnOf(history));
    expect(overrun(meter)).toBe("none");
    // One byte less than the turn's own fields: over.
    const below = new RunBudgetMeter({ ...roomy, maxTurnBytes: shell - 1 }, turnOf(history));
    below.measureTurn(turnOf(history));
    expect(overrun(below)).toMatchObject({ details: { budget: "maxTurnBytes", bytes: shell } });
  });

  it("measured again after blocks are added, replaced and removed, it is always what the run added", () => {
    const a = block("a", "first");
    const b = block("b", "second block");
    const c = block("c", "third");
    const x = block("x", "a first block of another length");
    const steps: Block[][] = [[a], [a, b], [a, b, c], [a, block("b2", "replaced, and longer than before"), c], [x, b], [a], [], [c, a]];
    steps.forEach((blocks, index) => {
      // The meter went through every earlier step (with room), then measures this one at its exact size and one below.
      const budgets = { ...roomy };
      const meter = new RunBudgetMeter(budgets, turnOf([a]));
      for (const earlier of steps.slice(0, index)) meter.measureTurn(turnOf(earlier));
      const length = addedBytes(turnOf(blocks), [a]);
      const where = JSON.stringify(blocks.map((each) => each.id));
      budgets.maxTurnBytes = length;
      meter.measureTurn(turnOf(blocks));
      expect(overrun(meter), where).toBe("none");
      budgets.maxTurnBytes = length - 1;
      meter.measureTurn(turnOf(blocks));
      const measured = overrun(meter);
      expect(measured, where).toMatchObject({ details: { budget: "maxTurnBytes", bytes: length } });
      expect((measured as HookboxError).message).toBe(`the run added ${length} bytes to its turn, over the turn budget of ${length - 1}`);
    });
  });

  it("a result block joins the turn's bytes: the turn stops at its budget, the result at its own", () => {
    const turn = turnOf([block("a", "x")]);
    const start = addedBytes(turn, turn.blocks);
    const result = block("r", "a tool result");
    const bytes = JSON.stringify(result).length;
    const fits = new RunBudgetMeter({ ...roomy, maxTurnBytes: start + bytes }, turn);
    fits.addResultBlock("t", result);
    expect(overrun(fits)).toBe("none");
    const over = new RunBudgetMeter({ ...roomy, maxTurnBytes: start + bytes - 1 }, turnOf([block("a", "x")]));
    over.addResultBlock("t", block("r", "a tool result"));
    expect(overrun(over)).toMatchObject({ code: "RUN_BUDGET", details: { budget: "maxTurnBytes", bytes: start + bytes } });
    // A second overrun does not replace the first.
    const first = overrun(over);
    over.addResultBlock("t", block("r2", "more"));
    expect(overrun(over)).toBe(first);
  });

  it("a result block over maxToolResultBytes throws at once, exactly at it is kept", () => {
    const result = block("r", "result text");
    const bytes = JSON.stringify(result).length;
    new RunBudgetMeter({ ...roomy, maxToolResultBytes: bytes }, turnOf([])).addResultBlock("lookup", result);
    expect(() =>
      new RunBudgetMeter({ ...roomy, maxToolResultBytes: bytes - 1 }, turnOf([])).addResultBlock("lookup", block("r", "result text")),
    ).toThrow(
      expect.objectContaining({
        code: "RUN_BUDGET",
        message: `tool lookup returned ${bytes} bytes, over the per-result budget of ${bytes - 1}`,
        details: { budget: "maxToolResultBytes", tool: "lookup", bytes },
      }),
    );
  });
});

describe("maxToolCallsPerInference and the per-result check", () => {
  it("exactly the budget of calls is allowed, one more is refused naming the count", () => {
    const meter = new RunBudgetMeter({ ...roomy, maxToolCallsPerInference: 3 }, turnOf([]));
    meter.checkToolCalls(3);
    expect(() => meter.checkToolCalls(4)).toThrow(
      expect.objectContaining({
        code: "RUN_BUDGET",
        message: "the model asked for 4 tool calls in one inference, over the budget of 3; none of them ran",
        details: { budget: "maxToolCallsPerInference", count: 4 },
      }),
    );
  });

  it("a result's bytes: at the budget kept, over it refused, no budget no check", () => {
    checkToolResultSize("t", 10, 10);
    checkToolResultSize("t", 10_000_000, undefined);
    expect(() => checkToolResultSize("t", 11, 10)).toThrow(
      expect.objectContaining({ details: { budget: "maxToolResultBytes", tool: "t", bytes: 11 } }),
    );
  });
});

describe("the defaults a run gets when it sets no budgets (docs/loop.md)", () => {
  /** A host tool returning `size` characters of text. */
  const blob: HostTool = {
    name: "blob",
    description: "returns text",
    parameters: { type: "object" },
    handler: (args) => ({ text: "x".repeat((args as { size: number }).size) }),
  };
  const calls = (count: number, size: number) => ({
    toolCalls: Array.from({ length: count }, (_, index) => ({ id: `c${index}`, name: "blob", args: { size } })),
  });
  const runWith = async (...steps: object[]) =>
    (await (await harness({ steps: [...steps, { text: "done" }] as never, host: { tools: [blob] } })).run()).result;

  it("64 tool calls in one inference run, 65 are RUN_BUDGET", async () => {
    expect(await runWith(calls(64, 1))).toMatchObject({ status: "completed" });
    expect(await runWith(calls(65, 1))).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
  });

  it("a result of 1 MiB less a little is kept, one of 1 MiB is RUN_BUDGET; three of them pass the 4 MiB turn, five do not", async () => {
    const under = 1024 * 1024 - 1000;
    expect(await runWith(calls(1, under))).toMatchObject({ status: "completed" });
    const over = await runWith(calls(1, 1024 * 1024));
    expect(over).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
    expect(over.reason).toContain("over the per-result budget of 1048576");
    expect(await runWith(calls(3, under))).toMatchObject({ status: "completed" });
    const turn = await runWith(calls(5, under));
    expect(turn).toMatchObject({ status: "failed", errorCode: "RUN_BUDGET" });
    expect(turn.reason).toContain("over the turn budget of 4194304");
  });
});
