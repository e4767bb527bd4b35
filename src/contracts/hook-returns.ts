import { z } from "zod";
import { JsonObjectSchema, JsonSchema, type Json, type JsonObject } from "../turns/json.js";
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

/*
 * The same contracts as plain types: what a host's own hooks (HostHooks) return and what the published declarations
 * show. The schemas above are what the loop checks; SchemasMatchTypes fails to compile when the two disagree.
 */

export type BeforeToolCallReturn =
  | undefined
  | { action: "proceed"; args?: JsonObject }
  | { action: "skip"; result: Json; reason?: string }
  | { action: "deny"; reason: string }
  | { action: "abort"; reason: string }
  | { action: "ask"; reason: string; timeoutMs?: number };

export type AfterToolCallReturn = undefined | { action: "abort"; reason: string } | { result?: Json; error?: string | null };

export type OnToolErrorReturn =
  | undefined
  | { action: "retry"; backoffMs?: number; args?: JsonObject }
  | { action: "fail"; error?: string }
  | { action: "abort"; reason: string };

export type BeforeRunReturn = undefined | { action: "proceed"; prompt?: string } | { action: "deny"; reason: string };

export type BeforeFinishReturn = undefined | { action: "continue"; message: string } | { action: "abort"; reason: string };

// Identical types, not merely assignable both ways (which would let an optional field on one side only through).
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only while each declared return type is exactly its schema's type. */
export type SchemasMatchTypes = [
  Same<BeforeToolCallReturn, z.infer<typeof BeforeToolCallReturnSchema>>,
  Same<AfterToolCallReturn, z.infer<typeof AfterToolCallReturnSchema>>,
  Same<OnToolErrorReturn, z.infer<typeof OnToolErrorReturnSchema>>,
  Same<BeforeRunReturn, z.infer<typeof BeforeRunReturnSchema>>,
  Same<BeforeFinishReturn, z.infer<typeof BeforeFinishReturnSchema>>,
] extends true[]
  ? true
  : never;
export const schemasMatchTypes: SchemasMatchTypes = true;

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
