import { z } from "zod";
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { HookboxError } from "../errors.js";
import { ModelSettingsSchema, type ModelSettings, type ToolChoice } from "../turns/keys.gen.js";
import type { JsonObject } from "../turns/json.js";
import type { UserContext } from "../contracts/context.js";

/*
 * A run's instructions and model settings (docs/loop.md "Instructions and model settings"), and what of the
 * user context the model is shown (the tenant's `userContextToModel`).
 */

export type { ModelSettings, ToolChoice };

/** Longest `system` text accepted from a request, a config or a flag (characters). */
export const MAX_SYSTEM_CHARS = 100_000;

/**
 * `toolChoice` as the inputs take it: generateText's spelling (`"auto"`, `"none"`, `"required"`,
 * `{type: "tool", toolName}`), or the provider-level `{type}` object the turn keeps.
 */
const ToolChoiceInput = z
  .union(
    [
      z.enum(["auto", "none", "required"]),
      z.strictObject({ type: z.enum(["auto", "none", "required"]) }),
      z.strictObject({ type: z.literal("tool"), toolName: z.string().min(1).max(256) }),
    ],
    { error: 'expected "auto", "none", "required" or {"type": "tool", "toolName": "NAME"}' },
  )
  .transform((choice): ToolChoice => (typeof choice === "string" ? { type: choice } : choice));

/** The model settings a request, a config file or the library gives; bounds every provider accepts. */
export const ModelSettingsInput = z.strictObject({
  temperature: z.number().min(0).max(2).optional(),
  maxOutputTokens: z.number().int().positive().max(1_000_000).optional(),
  topP: z.number().min(0).max(1).optional(),
  topK: z.number().int().positive().optional(),
  presencePenalty: z.number().min(-2).max(2).optional(),
  frequencyPenalty: z.number().min(-2).max(2).optional(),
  seed: z.number().int().optional(),
  stopSequences: z.array(z.string().min(1).max(200)).max(16).optional(),
  toolChoice: ToolChoiceInput.optional(),
});
/** What the library takes: toolChoice in generateText's spelling or as the turn keeps it. */
export type ModelSettingsInput = z.input<typeof ModelSettingsInput> | ModelSettings;

export const SystemInput = z.string().max(MAX_SYSTEM_CHARS);

/** The library's settings (toolChoice in either spelling) as the turn keeps them; a bad value is a CONFIG error naming the field. */
export function normalizeModelSettings(settings: ModelSettingsInput, where = "modelSettings"): ModelSettings {
  const parsed = ModelSettingsInput.safeParse(settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new HookboxError("CONFIG", `${[where, ...issue.path.map(String)].join(".")}: ${issue.message}`);
  }
  return ModelSettingsSchema.parse(parsed.data);
}

/**
 * The call options one model call carries for these settings. A tool choice naming a tool the run does not
 * offer is refused here (`MODEL_SETTINGS`) rather than sent: providers answer it with an opaque 400.
 */
export function callSettings(settings: ModelSettings | undefined, toolNames: string[]): Partial<LanguageModelV4CallOptions> {
  const { toolChoice, ...sampling } = settings ?? {};
  if (toolChoice?.type === "tool" && (toolChoice.toolName === undefined || !toolNames.includes(toolChoice.toolName)))
    throw new HookboxError(
      "MODEL_SETTINGS",
      `modelSettings.toolChoice names tool "${toolChoice.toolName ?? ""}", which this run does not offer (it offers: ${toolNames.join(", ") || "no tools"})`,
    );
  const options: Partial<LanguageModelV4CallOptions> = {};
  for (const [key, value] of Object.entries(sampling)) if (value !== undefined) (options as Record<string, unknown>)[key] = value;
  // What generateText sends when no tool choice is given, so a provider sees the same request from both.
  options.toolChoice =
    toolChoice === undefined
      ? { type: "auto" }
      : toolChoice.type === "tool"
        ? { type: "tool", toolName: toolChoice.toolName! }
        : { type: toolChoice.type };
  return options;
}

/**
 * What of the user context the model is shown: `"request"` (the default) the user's original request only,
 * `"none"` nothing, a list the request plus exactly the named fields. Never `timestampMs`: it changes on every
 * run, and a prompt prefix that changes defeats the providers' prompt caching.
 */
export type UserContextToModel = "request" | "none" | string[];

export const UserContextToModelInput = z.union(
  [
    z.literal("request"),
    z.literal("none"),
    z
      .array(
        z
          .string()
          .min(1)
          .max(256)
          .refine((field) => field !== "timestampMs", "timestampMs never goes to the model (it would break prompt caching)"),
      )
      .max(64),
  ],
  { error: 'expected "request", "none" or a list of user context field names' },
);

export function modelVisibleContext(userContext: UserContext, policy: UserContextToModel = "request"): JsonObject | undefined {
  if (policy === "none") return undefined;
  const visible: JsonObject = { originalUserRequest: userContext.originalUserRequest };
  if (policy === "request") return visible;
  for (const field of policy) {
    const value = userContext[field];
    if (field !== "timestampMs" && value !== undefined) visible[field] = value;
  }
  return visible;
}
