import { z } from "zod";
import { HookboxError } from "../errors.js";
import { jsonPath } from "../contracts/json-path.js";
import { KV_MAX_KEY_CHARS } from "./grants.js";

/*
 * What a script may ask through ctx.fetch, ctx.kv and ctx.model, as zod schemas: every request is
 * parsed from the isolate's JSON text and validated here before the host acts on it.
 */

const HeaderName = z.string().min(1).max(256);
const FetchSchema = z.strictObject({
  kind: z.literal("fetch"),
  url: z.string().min(1).max(8192),
  method: z
    .enum(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "get", "head", "post", "put", "patch", "delete", "options"])
    .optional(),
  headers: z
    .record(HeaderName, z.string().max(8192))
    .refine((headers) => Object.keys(headers).length <= 64, "at most 64 headers")
    .optional(),
  body: z.string().optional(),
});

const Key = z.string().min(1).max(KV_MAX_KEY_CHARS);
const TtlMs = z
  .number()
  .int()
  .positive()
  .max(366 * 24 * 3600 * 1000)
  .optional();
const KvSchema = z.discriminatedUnion("op", [
  z.strictObject({ kind: z.literal("kv"), op: z.literal("get"), key: Key }),
  z.strictObject({
    kind: z.literal("kv"),
    op: z.literal("set"),
    key: Key,
    value: z.unknown().refine((value) => value !== undefined, "a value is required (JSON; use delete to remove a key)"),
    ttlMs: TtlMs,
  }),
  z.strictObject({
    kind: z.literal("kv"),
    op: z.literal("incr"),
    key: Key,
    by: z.number().finite().optional(),
    ttlMs: TtlMs,
  }),
  z.strictObject({
    kind: z.literal("kv"),
    op: z.literal("compareAndSet"),
    key: Key,
    // null: the key must be missing (or hold null), as get reads it.
    expected: z.unknown().refine((value) => value !== undefined, "an expected value is required (JSON; null for a missing key)"),
    value: z.unknown().refine((value) => value !== undefined, "a value is required (JSON; use delete to remove a key)"),
    ttlMs: TtlMs,
  }),
  z.strictObject({ kind: z.literal("kv"), op: z.literal("delete"), key: Key }),
  z.strictObject({
    kind: z.literal("kv"),
    op: z.literal("list"),
    prefix: z.string().max(KV_MAX_KEY_CHARS).optional(),
    cursor: Key.optional(),
  }),
]);

const ModelSchema = z.strictObject({
  kind: z.literal("model"),
  prompt: z
    .string()
    .max(256 * 1024)
    .optional(),
  messages: z
    .array(z.strictObject({ role: z.enum(["system", "user", "assistant"]), content: z.string().max(256 * 1024) }))
    .max(100)
    .optional(),
  maxTokens: z.number().int().positive().optional(),
});

export const CapabilityRequestSchema = z.discriminatedUnion("kind", [FetchSchema, KvSchema, ModelSchema]);
export type CapabilityRequest = z.infer<typeof CapabilityRequestSchema>;
export type FetchCapabilityRequest = z.infer<typeof FetchSchema>;
export type KvCapabilityRequest = z.infer<typeof KvSchema>;
export type ModelCapabilityRequest = z.infer<typeof ModelSchema>;

const NAMES: Record<string, string> = { fetch: "ctx.fetch", kv: "ctx.kv", model: "ctx.model.generate" };

/** Parses and validates a request; anything else is CAPABILITY_INVALID naming the field. */
export function parseCapabilityRequest(text: string, maxChars: number): CapabilityRequest {
  if (text.length > maxChars)
    throw new HookboxError("CAPABILITY_QUOTA", `a capability request of ${text.length} characters exceeds the ${maxChars}-character limit`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new HookboxError("CAPABILITY_INVALID", "a capability request was not JSON");
  }
  const parsed = CapabilityRequestSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const kind = (raw as { kind?: unknown; op?: unknown } | null)?.kind;
  const op = (raw as { op?: unknown } | null)?.op;
  const name = typeof kind === "string" && NAMES[kind] ? NAMES[kind] + (kind === "kv" && typeof op === "string" ? `.${op}` : "") : "ctx";
  throw new HookboxError("CAPABILITY_INVALID", `${name}: ${jsonPath(issue.path)}: ${issue.message}`, { path: jsonPath(issue.path) });
}
