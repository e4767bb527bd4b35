import { resolve } from "node:path";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import { loadScriptedSteps, ScriptedModel } from "./scripted.js";

/** How the model is chosen from a CLI flag or config string. */
export type ModelSpec =
  { kind: "scripted"; file: string } | { kind: "openai-compatible"; model: string; baseUrl: string; apiKeyEnv?: string };

/** `scripted:FILE` or `openai-compatible:MODEL` (with a base URL) -> a ModelSpec. */
export function parseModelFlag(
  flag: string,
  options: { baseUrl?: string; apiKeyEnv?: string; cwd?: string; /** Names the flag in errors (default --model). */ flag?: string } = {},
): ModelSpec {
  const name = options.flag ?? "--model";
  const colon = flag.indexOf(":");
  const kind = colon < 0 ? flag : flag.slice(0, colon);
  const rest = colon < 0 ? "" : flag.slice(colon + 1);
  if (kind === "scripted" && rest) return { kind: "scripted", file: resolve(options.cwd ?? process.cwd(), rest) };
  if (kind === "openai-compatible" && rest) {
    if (!options.baseUrl) throw new HookboxError("USAGE", `${name} ${flag} needs --base-url URL`);
    return { kind: "openai-compatible", model: rest, baseUrl: options.baseUrl, apiKeyEnv: options.apiKeyEnv };
  }
  throw new HookboxError("USAGE", `${name} "${flag}": expected scripted:FILE or openai-compatible:MODEL`);
}

/**
 * A factory, not a model: a scripted model replays its steps from the first for every run,
 * so each run gets its own instance. The steps file is read and validated once, up front.
 */
export function modelFactory(spec: ModelSpec): (resumeAfterIterations?: number) => LanguageModelV4 {
  if (spec.kind === "scripted") {
    const steps = loadScriptedSteps(spec.file);
    // A resumed run continues with the step after the inferences it already finished. Nothing reads its calls.
    return (resumeAfterIterations = 0) => new ScriptedModel(steps.slice(resumeAfterIterations), "scripted", { keepCalls: 0 });
  }
  const apiKeyEnv = spec.apiKeyEnv ?? "OPENAI_API_KEY";
  const provider = createOpenAICompatible({ name: "openai-compatible", baseURL: spec.baseUrl, apiKey: process.env[apiKeyEnv] });
  return () => provider.chatModel(spec.model);
}
