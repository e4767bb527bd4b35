import { z } from "zod";
import { JsonObjectSchema, JsonSchema } from "../turns/json.js";
import type { HookName } from "../turns/keys.gen.js";

/*
 * What each lifecycle hook may return (docs/script-api.md). `undefined` means "no opinion".
 * Strict objects: an unknown key is a contract error, not silently ignored.
 * types/hookbox.d.ts declares the same unions for script authors; test/contracts proves they agree.
 */

export const BeforeToolCallReturnSchema = z.union([
  z.undefined(),
  z.strictObject({ action: z.literal("proceed"), args: JsonObjectSchema.optional() }),
  z.strictObject({ action: z.literal("skip"), result: JsonSchema, reason: z.string().optional() }),
  z.strictObject({ action: z.literal("deny"), reason: z.string() }),
  z.strictObject({ action: z.literal("abort"), reason: z.string() }),
  z.strictObject({ action: z.literal("ask"), reason: z.string(), timeoutMs: z.number().int().positive().optional() }),
]);

export const AfterToolCallReturnSchema = z.union([
  z.undefined(),
  z.strictObject({ action: z.literal("abort"), reason: z.string() }),
  z.strictObject({ result: JsonSchema.optional(), error: z.union([z.string(), z.null()]).optional() }),
]);

export const OnToolErrorReturnSchema = z.union([
  z.undefined(),
  z.strictObject({
    action: z.literal("retry"),
    backoffMs: z.number().int().nonnegative().optional(),
    args: JsonObjectSchema.optional(),
  }),
  z.strictObject({ action: z.literal("fail"), error: z.string().optional() }),
  z.strictObject({ action: z.literal("abort"), reason: z.string() }),
]);

/* Run hooks (docs/script-api.md): before the first inference, and before a run finishes. */

export const BeforeRunReturnSchema = z.union([
  z.undefined(),
  z.strictObject({ action: z.literal("proceed"), prompt: z.string().min(1).optional() }),
  z.strictObject({ action: z.literal("deny"), reason: z.string() }),
]);

export const BeforeFinishReturnSchema = z.union([
  z.undefined(),
  z.strictObject({ action: z.literal("continue"), message: z.string().min(1) }),
  z.strictObject({ action: z.literal("abort"), reason: z.string() }),
]);

export type BeforeToolCallReturn = z.infer<typeof BeforeToolCallReturnSchema>;
export type AfterToolCallReturn = z.infer<typeof AfterToolCallReturnSchema>;
export type OnToolErrorReturn = z.infer<typeof OnToolErrorReturnSchema>;
export type BeforeRunReturn = z.infer<typeof BeforeRunReturnSchema>;
export type BeforeFinishReturn = z.infer<typeof BeforeFinishReturnSchema>;

export interface HookReturns {
  beforeToolCall: BeforeToolCallReturn;
  afterToolCall: AfterToolCallReturn;
  onToolError: OnToolErrorReturn;
  beforeRun: BeforeRunReturn;
  beforeFinish: BeforeFinishReturn;
}

export const hookReturnSchemas: { [H in HookName]: z.ZodType<HookReturns[H]> } = {
  beforeToolCall: BeforeToolCallReturnSchema,
  afterToolCall: AfterToolCallReturnSchema,
  onToolError: OnToolErrorReturnSchema,
  beforeRun: BeforeRunReturnSchema,
  beforeFinish: BeforeFinishReturnSchema,
};
