import { readFileSync } from "node:fs";
import { z } from "zod";
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
  LanguageModelV4Usage,
} from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import { JsonObjectSchema, type JsonObject } from "../turns/json.js";
import { jsonPath } from "../contracts/json-path.js";
import { parseJsonText } from "../contracts/json-text.js";

/** One step of the scripted model file (docs/cli.md): `{"steps":[{"toolCalls":[{"id","name","args"}]},{"text":"..."}]}`. */
export interface ScriptedStep {
  text?: string;
  reasoning?: string;
  toolCalls?: { id: string; name: string; args: JsonObject }[];
  /** Simulated latency; honours cancellation. */
  delayMs?: number;
  /** What this inference reports as used (default none), for budgets and usage. */
  usage?: { inputTokens: number; outputTokens: number };
}

// Declared as the plain type above, so the published declarations show the step and not zod's inferred object.
const ScriptedStepSchema: z.ZodType<ScriptedStep> = z.strictObject({
  text: z.string().optional(),
  reasoning: z.string().optional(),
  toolCalls: z.array(z.strictObject({ id: z.string().min(1), name: z.string().min(1), args: JsonObjectSchema })).optional(),
  delayMs: z.number().int().nonnegative().optional(),
  usage: z.strictObject({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() }).optional(),
});
const ScriptedFileSchema = z.strictObject({ steps: z.array(ScriptedStepSchema).min(1) });

export function loadScriptedSteps(file: string): ScriptedStep[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new HookboxError("CONFIG", `scripted model ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let raw: unknown;
  try {
    raw = parseJsonText(text);
  } catch (error) {
    throw new HookboxError("CONFIG", `scripted model ${file}: not valid JSON: ${(error as Error).message}`, { file });
  }
  const parsed = ScriptedFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = jsonPath(issue?.path ?? []);
    throw new HookboxError("CONFIG", `scripted model ${file}: ${path}: ${issue?.message ?? "invalid"}`, { file, path });
  }
  return parsed.data.steps;
}

/** A step's token counts in the AI SDK's nested usage shape (no cache, no reasoning tokens). */
function stepUsage(step: ScriptedStep): LanguageModelV4Usage {
  const input = step.usage?.inputTokens ?? 0;
  const output = step.usage?.outputTokens ?? 0;
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 },
  };
}

export interface ScriptedModelOptions {
  /** How many of the latest calls' options `calls` keeps, for a test to see what the model saw (default 32; 0: none). */
  keepCalls?: number;
}

/**
 * The offline, deterministic engine: each inference consumes the next step. It implements the AI SDK's
 * LanguageModelV4 like any provider, and keeps the latest calls' options (a bounded number: a long run's
 * prompts are not kept) so tests can see what the model saw. A `scripted:` model spec keeps none.
 */
export class ScriptedModel implements LanguageModelV4 {
  readonly specificationVersion = "v4" as const;
  readonly provider = "hookbox.scripted";
  readonly supportedUrls = {};
  /** The latest calls' options, oldest first (at most `keepCalls`). */
  readonly calls: LanguageModelV4CallOptions[] = [];
  /** Every call made, kept or not. */
  callCount = 0;
  private next = 0;
  private readonly keepCalls: number;

  constructor(
    private readonly steps: ScriptedStep[],
    readonly modelId = "scripted",
    options: ScriptedModelOptions = {},
  ) {
    this.keepCalls = options.keepCalls ?? 32;
  }

  async doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
    const step = await this.take(options);
    const content: LanguageModelV4Content[] = [];
    if (step.reasoning) content.push({ type: "reasoning", text: step.reasoning });
    if (step.text !== undefined) content.push({ type: "text", text: step.text });
    for (const call of step.toolCalls ?? []) {
      content.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input: JSON.stringify(call.args) });
    }
    const finish = step.toolCalls?.length ? "tool-calls" : "stop";
    return { content, finishReason: { unified: finish, raw: finish }, usage: stepUsage(step), warnings: [] };
  }

  // The return type is the interface's own, so the published declaration names no stream type of @types/node.
  async doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
    const result = await this.doGenerate(options);
    const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
    for (const part of result.content) {
      if (part.type === "text") {
        parts.push({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: part.text }, { type: "text-end", id: "t" });
      } else if (part.type === "tool-call") {
        parts.push(part);
      }
    }
    parts.push({ type: "finish", usage: result.usage, finishReason: result.finishReason });
    return {
      stream: new ReadableStream<LanguageModelV4StreamPart>({
        start(c) {
          for (const p of parts) c.enqueue(p);
          c.close();
        },
      }),
    };
  }

  private async take(options: LanguageModelV4CallOptions): Promise<ScriptedStep> {
    this.callCount += 1;
    if (this.keepCalls > 0) {
      this.calls.push(options);
      if (this.calls.length > this.keepCalls) this.calls.shift();
    }
    const step = this.steps[this.next];
    if (!step) {
      throw new HookboxError("ENGINE", `scripted model ran out of steps: inference ${this.next + 1} but the file has ${this.steps.length}`);
    }
    this.next += 1;
    if (step.delayMs) await delay(step.delayMs, options.abortSignal);
    return step;
  }
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
