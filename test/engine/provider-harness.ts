import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { generateText, isStepCount, jsonSchema, streamText, tool } from "ai";
import { createTenantRuntime, type TenantRuntimeExtras } from "../../src/host/tenant-runtime.js";
import type { SandboxPool, ScriptSource } from "../../src/sandbox/api.js";
import type { HostTool } from "../../src/loop/tool-registry.js";
import type { HostModule } from "../../src/host/host-module.js";
import type { HookboxEvent } from "../../src/events/types.js";
import type { RunOptions, RunResult } from "../../src/host/types.js";
import { recording, type RecordedRequest, type Reply } from "../helpers/recorded-provider.js";

/*
 * Runs hookbox and, for comparison, the AI SDK's own generateText / streamText against the same recorded
 * provider answers, through the real provider packages, and returns what each sent.
 */

export const ORDER_PARAMETERS = { type: "object", properties: { id: { type: "string" } }, required: ["id"] } as const;
export const PROMPT = "What is the total of order A17?";

/** The tool every recorded conversation calls. */
export const lookupOrder = (handler: HostTool["handler"] = (args) => ({ id: args.id, total: 120 })): HostTool => ({
  name: "lookup_order",
  description: "Look up an order",
  parameters: ORDER_PARAMETERS as never,
  handler,
});

const noPool: SandboxPool = {
  tenant() {
    throw new Error("no sandbox in this test");
  },
  async close() {},
};

/** The model with every call's prompt recorded (hookbox's system text is read from it for the comparison). */
function capturing(model: LanguageModelV4, prompts: LanguageModelV4Prompt[]): LanguageModelV4 {
  return {
    specificationVersion: "v4",
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doGenerate: (options: LanguageModelV4CallOptions) => {
      prompts.push(options.prompt);
      return model.doGenerate(options);
    },
    doStream: (options: LanguageModelV4CallOptions) => {
      prompts.push(options.prompt);
      return model.doStream(options);
    },
  };
}

export interface HookboxRun {
  result: RunResult;
  events: HookboxEvent[];
  requests: RecordedRequest[];
  prompts: LanguageModelV4Prompt[];
}

export async function runHookbox(setup: {
  model: (fetch: typeof globalThis.fetch) => LanguageModelV4;
  /** A fallback model answering from the same recorded answers, in turn. */
  fallback?: (fetch: typeof globalThis.fetch) => LanguageModelV4;
  replies: Reply[];
  stream: boolean;
  tools?: HostTool[];
  host?: Partial<HostModule>;
  scripts?: ScriptSource[];
  pool?: SandboxPool;
  extras?: TenantRuntimeExtras;
  options?: RunOptions;
}): Promise<HookboxRun> {
  const recorded = recording(setup.replies);
  const prompts: LanguageModelV4Prompt[] = [];
  const runtime = await createTenantRuntime(
    { name: `t-${Math.random().toString(36).slice(2)}`, scripts: setup.scripts ?? [], model: { kind: "scripted", file: "/unused" } },
    setup.pool ?? noPool,
    {
      ...setup.extras,
      model: capturing(setup.model(recorded.fetch), prompts),
      ...(setup.fallback ? { fallbackModel: capturing(setup.fallback(recorded.fetch), prompts) } : {}),
      stream: setup.stream,
      host: { tools: setup.tools ?? [lookupOrder()], ...setup.host },
    },
  );
  const handle = runtime.start({ sessionId: "sess_recorded", prompt: PROMPT, options: { modelRetries: 0, ...setup.options } });
  const events: HookboxEvent[] = [];
  for await (const event of handle.events()) events.push(event);
  return { result: await handle.wait(), events, requests: recorded.requests, prompts };
}

/** lookup_order as an AI SDK tool, answering as the host tool does. */
export function sdkTools(result: (args: { id: string }) => unknown = (args) => ({ id: args.id, total: 120 })) {
  return {
    lookup_order: tool({
      description: "Look up an order",
      inputSchema: jsonSchema<{ id: string }>(ORDER_PARAMETERS as never),
      execute: async (args: { id: string }) => result(args),
    }),
  };
}

/** The AI SDK's own loop over the same recorded answers, with hookbox's system text and the same tool. */
export async function runAiSdk(setup: {
  model: (fetch: typeof globalThis.fetch) => LanguageModelV4;
  replies: Reply[];
  stream: boolean;
  system: string;
  steps: number;
  providerTools?: Record<string, unknown>;
  result?: (args: { id: string }) => unknown;
}): Promise<RecordedRequest[]> {
  const recorded = recording(setup.replies);
  const tools = { ...sdkTools(setup.result), ...(setup.providerTools as object) };
  const common = {
    model: setup.model(recorded.fetch),
    system: setup.system,
    prompt: PROMPT,
    tools: tools as never,
    stopWhen: isStepCount(setup.steps),
    maxRetries: 0,
  };
  if (setup.stream) {
    const result = streamText({ ...common, onError: () => undefined } as never);
    await (result as ReturnType<typeof streamText>).consumeStream();
  } else {
    await generateText(common as never);
  }
  return recorded.requests;
}

/** hookbox's system text: the first message of the first prompt it sent. */
export function systemText(run: HookboxRun): string {
  const first = run.prompts[0]?.[0];
  if (first?.role !== "system") throw new Error("hookbox's prompt does not start with its system text");
  return first.content;
}

export const ofType = <T extends HookboxEvent["type"]>(events: HookboxEvent[], type: T) =>
  events.filter((e): e is Extract<HookboxEvent, { type: T }> => e.type === type);
