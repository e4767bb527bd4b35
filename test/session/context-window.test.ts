import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LanguageModelV4CallOptions, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { openMemoryStore } from "../../src/store/open.js";
import type { Store } from "../../src/store/types.js";
import { SessionManager } from "../../src/session/manager.js";
import { createTenantRuntime } from "../../src/host/tenant-runtime.js";
import type { ContextOptions, TenantConfig } from "../../src/host/types.js";
import type { SandboxPool } from "../../src/sandbox/api.js";
import type { HookboxEvent } from "../../src/events/types.js";
import { ScriptedModel, type ScriptedStep } from "../../src/engine/scripted.js";
import { writeSteps } from "../helpers/harness.js";
import { startOpenAIServer } from "../helpers/openai-server.js";

/*
 * The model's context through the library: a session far longer than its context budget keeps running, every
 * model call is sent at most the budget, what left is recorded (context-trimmed) and stands in the turn as a note
 * or as a summary made by the tenant's guard model (a real OpenAI-compatible server on loopback).
 */

const noPool: SandboxPool = {
  tenant() {
    throw new Error("no sandbox in this test");
  },
  async close() {},
};

const lookup = {
  name: "lookup",
  description: "returns a 600-character record",
  parameters: { type: "object" },
  handler: (args: { id?: string }) => ({ id: args.id ?? "?", record: "r".repeat(600) }),
};

const STEPS: ScriptedStep[] = [{ toolCalls: [{ id: "c1", name: "lookup", args: { id: "A17" } }] }, { text: "Order A17 totals 120." }];

/** What every model call was sent: its prompt, and the prompt's JSON length. */
class PromptLog {
  readonly prompts: LanguageModelV4Prompt[] = [];
  readonly sizes: number[] = [];
  model() {
    const model = new ScriptedModel(STEPS, "scripted", { keepCalls: 0 });
    const generate = model.doGenerate.bind(model);
    model.doGenerate = (options: LanguageModelV4CallOptions) => {
      this.prompts.push(options.prompt);
      this.sizes.push(JSON.stringify(options.prompt).length);
      return generate(options);
    };
    return model;
  }
}

async function tenant(context: ContextOptions, extra: Partial<TenantConfig> = {}) {
  const config: TenantConfig = {
    name: "acme",
    scripts: [],
    model: { kind: "scripted", file: writeSteps(STEPS) },
    runDefaults: { context },
    ...extra,
  };
  const log = new PromptLog();
  const runtime = await createTenantRuntime(config, noPool, { host: { tools: [lookup] }, model: () => log.model() });
  const store = openMemoryStore();
  const manager = new SessionManager({ store, runtimeFor: async () => runtime });
  const session = await manager.create({ tenant: "acme", tenantConfig: config });
  return { log, store, manager, session };
}

async function runAll(
  session: { run(prompt: string): Promise<{ runId: string; wait(): Promise<{ status: string }> }> },
  store: Store,
  runs: number,
) {
  const events: HookboxEvent[][] = [];
  for (let run = 1; run <= runs; run++) {
    const handle = await session.run(`question ${run}`);
    expect((await handle.wait()).status, `run ${run}`).toBe("completed");
    events.push(await store.listEvents(handle.runId));
  }
  return events;
}

const userText = (message: LanguageModelV4Prompt[number]) =>
  message.role === "user" ? message.content.map((part) => (part.type === "text" ? part.text : "")).join("") : "";

describe("the model's context", () => {
  it("past the budget the oldest messages leave the turn, with a note in their place and an event that says so", async () => {
    const { log, store, manager, session } = await tenant({ maxBytes: 6_000 });
    const events = await runAll(session, store, 30);
    // Every call was sent at most the budget, however long the session grew (30 runs of about 1,700 bytes).
    expect(Math.max(...log.sizes)).toBeLessThanOrEqual(6_000);
    const trims = events.flat().filter((e) => e.type === "context-trimmed");
    expect(trims.length).toBeGreaterThan(3);
    let total = 0;
    for (const runEvents of events) {
      runEvents.forEach((event, index) => {
        if (event.type !== "context-trimmed") return;
        // Recorded before the inference it made room for, with what it left out.
        expect(runEvents[index + 1]).toMatchObject({ type: "inference-started", iteration: event.iteration });
        expect(event).toMatchObject({ summarized: false, budgetBytes: 6_000 });
        expect(event.droppedMessages).toBeGreaterThan(0);
        expect(event.droppedBytes).toBeGreaterThan(event.droppedMessages * 100);
        expect(event.droppedTokens).toBe(Math.round(event.droppedBytes / 4));
        expect(event.keptBytes).toBeLessThanOrEqual(0.75 * 6_000 + 400);
        total += event.droppedMessages;
        expect(event.totalDroppedMessages).toBe(total);
      });
    }
    // The model sees the note first (a user message), then the newest exchanges; never the first question.
    const last = log.prompts.at(-1)!.filter((m) => m.role !== "system");
    expect(userText(last[0])).toBe(
      `Context (trimmed): ${total} earlier messages were left out of this conversation to fit the model's context budget.`,
    );
    expect(JSON.stringify(last)).not.toContain('question 1"');
    expect(userText(last.findLast((m) => m.role === "user")!)).toBe("question 30");
    // The session's turn is the trimmed one; the first run's own snapshots still hold the conversation as it was.
    const history = await manager.history(session.id);
    expect(history!.blocks[0]).toMatchObject({ kind: "context", payload: { restart_type: "trimmed", dropped_messages: total } });
    const firstRun = (await store.listRuns(session.id))[0];
    expect(JSON.stringify((await store.latestSnapshot(firstRun.id))!.turn)).toContain("question 1");
    await store.close();
  });

  it("a turn within the budget is sent whole and nothing is trimmed", async () => {
    const { log, store, session } = await tenant({ maxTokens: 100_000 });
    const events = await runAll(session, store, 10);
    expect(events.flat().some((e) => e.type === "context-trimmed")).toBe(false);
    expect(JSON.stringify(log.prompts.at(-1))).toContain('question 1"');
    await store.close();
  });

  describe("summaries by the tenant's guard model", () => {
    let guard: Awaited<ReturnType<typeof startOpenAIServer>>;
    beforeAll(async () => {
      guard = await startOpenAIServer(
        Array.from({ length: 50 }, (_, i) => ({
          text: `SUMMARY ${i + 1}: the user asked about order A17 (120).`,
          usage: { input: 300, output: 20 },
        })),
      );
    });
    afterAll(() => guard.close());

    it("what leaves is summarized once, the summary stands in the turn and goes on into the next summary", async () => {
      const before = guard.requests.length;
      const { log, store, session } = await tenant(
        { maxBytes: 6_000, summarize: true },
        { capabilities: { guardModel: { kind: "openai-compatible", model: "guard-1", baseUrl: guard.url } } },
      );
      const events = await runAll(session, store, 24);
      const trims = events.flat().filter((e) => e.type === "context-trimmed");
      expect(trims.length).toBeGreaterThan(2);
      // One guard call per trim: a summary is kept in the session's turn, never made again at the next run.
      const requests = guard.requests.slice(before);
      expect(requests.length).toBe(trims.length);
      trims.forEach((trim, i) => {
        expect(trim).toMatchObject({
          summarized: true,
          model: "guard-1",
          usage: { inputTokens: 300, outputTokens: 20, costUsd: 0 },
        });
        const asked = JSON.stringify(requests[i].messages);
        expect(asked).toContain("question");
        // Each summary goes on from the one before it.
        if (i > 0) expect(asked).toContain(`Summary so far:\\nSUMMARY ${before + i}:`);
      });
      // The main model is sent the latest summary where the left-out messages were.
      const last = log.prompts.at(-1)!.filter((m) => m.role !== "system");
      expect(userText(last[0])).toBe(`Context (summary): SUMMARY ${before + trims.length}: the user asked about order A17 (120).`);
      expect(Math.max(...log.sizes)).toBeLessThanOrEqual(6_000);
      // The summaries' tokens are the run's: in run-finished's usage and in the tenant's usage totals.
      const trimmedRun = events.find((runEvents) => runEvents.some((e) => e.type === "context-trimmed"))!;
      expect(trimmedRun.at(-1)).toMatchObject({ type: "run-finished", usage: { inputTokens: 300, outputTokens: 20 } });
      expect(await store.usageTotals("acme", 0)).toMatchObject({ inputTokens: 300 * trims.length, outputTokens: 20 * trims.length });
      await store.close();
    });

    it("a guard model that fails leaves the note in place of a summary, and the run goes on", async () => {
      const failing = await startOpenAIServer([], { afterReplies: { status: 400 } });
      try {
        const { log, store, session } = await tenant(
          { maxBytes: 6_000, summarize: true },
          { capabilities: { guardModel: { kind: "openai-compatible", model: "guard-2", baseUrl: failing.url } } },
        );
        const events = await runAll(session, store, 12);
        const trims = events.flat().filter((e) => e.type === "context-trimmed");
        expect(trims.length).toBeGreaterThan(0);
        for (const trim of trims) {
          expect(trim).toMatchObject({ summarized: false });
          expect(trim.type === "context-trimmed" && trim.summaryError).toMatch(/the guard model failed/);
        }
        expect(userText(log.prompts.at(-1)!.filter((m) => m.role !== "system")[0])).toMatch(/^Context \(trimmed\): \d+ earlier messages/);
        await store.close();
      } finally {
        await failing.close();
      }
    });

    it("without a guard model the policy's summaries fall back to the note, saying why", async () => {
      const { store, session } = await tenant({ maxBytes: 6_000, summarize: true });
      const events = await runAll(session, store, 8);
      const trim = events.flat().find((e) => e.type === "context-trimmed");
      expect(trim).toMatchObject({ summarized: false, summaryError: expect.stringMatching(/no guard model/) });
      await store.close();
    });
  });
});
