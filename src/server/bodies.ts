import type { Context } from "hono";
import { z } from "zod";
import { JsonObjectSchema, JsonSchema } from "../turns/json.js";
import { TagsSchema } from "../contracts/context.js";
import { ApiError } from "./api-error.js";
import { jsonPath } from "../contracts/json-path.js";
import { exceedsJsonLimits } from "./json-limits.js";
import { readRequestBytes } from "./request-body.js";
import { requestHeader } from "./request-headers.js";
import { ModelSettingsInput, SystemInput } from "../engine/model-settings.js";
import { MAX_STREAM_TOKEN_TTL_MS } from "./stream-token.js";

/** No pause waits longer than a day, whatever a tenant's limits say. */
const MAX_PAUSE_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/* Request bodies, validated with zod; unknown fields are refused so a typo is not silently ignored. */

const UserContextInput = z.object({ userId: z.string().optional(), projectId: z.string().optional() }).catchall(JsonSchema);

/** The model's context for the run (docs/loop.md); the tenant's `context` is the ceiling. */
const ContextInput = z.strictObject({
  maxTokens: z.number().int().positive().optional(),
  maxBytes: z.number().int().positive().optional(),
  summarize: z.boolean().optional(),
});

const RunDefaultsSchema = z.strictObject({
  system: SystemInput.optional(),
  modelSettings: ModelSettingsInput.optional(),
  step: z.boolean().optional(),
  maxIterations: z.number().int().positive().max(1000).optional(),
  pauseTimeoutMs: z.number().int().positive().max(MAX_PAUSE_TIMEOUT_MS).optional(),
  tags: TagsSchema.optional(),
  userContext: UserContextInput.optional(),
  maxTokens: z.number().int().positive().optional(),
  maxCostUsd: z.number().positive().optional(),
  context: ContextInput.optional(),
});

export const CreateSessionBody = z.strictObject({ defaults: RunDefaultsSchema.optional() });

export const StartRunBody = z.strictObject({
  prompt: z.string().min(1).max(100_000),
  system: SystemInput.optional(),
  modelSettings: ModelSettingsInput.optional(),
  userContext: UserContextInput.optional(),
  step: z.boolean().optional(),
  tags: TagsSchema.optional(),
  maxIterations: z.number().int().positive().max(1000).optional(),
  pauseTimeoutMs: z.number().int().positive().max(MAX_PAUSE_TIMEOUT_MS).optional(),
  maxTokens: z.number().int().positive().optional(),
  maxCostUsd: z.number().positive().optional(),
  context: ContextInput.optional(),
});

export const ContinueBody = z.strictObject({ pauseId: z.string().min(1).max(200) });

export const ApprovalBody = z
  .strictObject({
    decision: z.enum(["approve", "reject"]),
    args: JsonObjectSchema.optional(),
    reason: z.string().max(2000).optional(),
    /** Who approved, kept in the audit event (approve only). */
    approvedBy: z.string().min(1).max(200).optional(),
  })
  .refine((body) => body.decision === "approve" || body.approvedBy === undefined, {
    message: "approvedBy goes with decision approve",
    path: ["approvedBy"],
  });

export const StreamTokenBody = z.strictObject({
  /** How long the token is valid, ms (default 300000, at most 3600000). */
  ttlMs: z.number().int().min(1000).max(MAX_STREAM_TOKEN_TTL_MS).optional(),
});

export const ForkBody = z.strictObject({ runId: z.string().min(1).optional() });

const utf8 = new TextDecoder("utf-8", { fatal: true });
/** Longest part of a validation message repeated back (an unknown-keys message can list thousands). */
const MAX_MESSAGE_CHARS = 300;

/**
 * Reads and validates a JSON body. The size limit is enforced before this runs; then, in order and each a
 * 4xx naming the problem: the content type (JSON, or none), UTF-8, depth and value count (json-limits.ts),
 * JSON syntax, the schema. zod therefore only walks a bounded tree. An empty body reads as `{}` when allowed.
 */
export async function readBody<T extends z.ZodType>(c: Context, schema: T, options: { emptyAs?: unknown } = {}): Promise<z.infer<T>> {
  const type = requestHeader(c, "content-type");
  if (type !== undefined && !/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type.trim()))
    throw new ApiError(
      415,
      "UNSUPPORTED_MEDIA_TYPE",
      `the request body must be JSON (Content-Type: application/json), got "${type.slice(0, 80)}"`,
    );
  let text: string;
  try {
    text = utf8.decode(await readRequestBytes(c));
  } catch (error) {
    if (error instanceof ApiError) throw error; // over the size limit
    throw new ApiError(400, "INVALID_JSON", "the request body is not valid UTF-8", "$");
  }
  let value: unknown;
  if (text.trim() === "" && options.emptyAs !== undefined) {
    value = options.emptyAs;
  } else {
    const tooBig = exceedsJsonLimits(text);
    if (tooBig) throw new ApiError(400, "INVALID_JSON", tooBig, "$");
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ApiError(400, "INVALID_JSON", `the request body is not valid JSON: ${clip((error as Error).message)}`, "$");
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = clip(jsonPath(issue.path));
    const message =
      issue.code === "unrecognized_keys"
        ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}`
        : issue.message;
    throw new ApiError(400, "VALIDATION", `${path}: ${clip(message)}`, path);
  }
  return parsed.data;
}

function clip(text: string): string {
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}...` : text;
}
